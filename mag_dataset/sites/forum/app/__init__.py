"""The Django project that serves Spirit for the ``forum`` site; copied to ``<home>/app`` and run in the site's venv."""

"""The shop's Django project files, copied into the site's ``app/`` folder by setup.

These modules run inside the site's own virtual environment (Django, django-oscar); the
package never imports them.
"""

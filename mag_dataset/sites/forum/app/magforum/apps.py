"""Two changes to Spirit, made when Django starts.

* Absolute dates everywhere: Spirit prints "5m"/"3h"/"12 Mar" relative to the clock, which would
  drift between recordings; its date filter is replaced by a fixed "12 Mar 2024, 14:05" rendering.
* Search sees new posts at once: without a task queue (Celery/Huey) Spirit never indexes a new
  topic or reply (``spirit.core.tasks.search_index_update`` returns early); here it indexes in the
  request (a small Whoosh index; haystack logs, not raises, an indexing error).
"""
from django.apps import AppConfig


def absolute_date(value):
    from django.template import defaultfilters

    return defaultfilters.date(value, "j M Y, H:i") if value else ""


absolute_date.expects_localtime = True


class MagForumConfig(AppConfig):
    name = "magforum"

    def ready(self):
        from django.contrib.humanize.templatetags import humanize
        from spirit.core.templatetags import spirit_tags  # registers the originals first

        register = spirit_tags.register

        register.filters["shortnaturaltime"] = absolute_date
        humanize.register.filters["naturaltime"] = absolute_date

        from spirit.core import signals, tasks
        from spirit.topic.models import Topic

        def search_index_update(topic_pk):
            signals.search_index_update.send(sender=Topic, instance=Topic.objects.get(pk=topic_pk))

        tasks.search_index_update = search_index_update

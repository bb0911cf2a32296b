"""Absolute dates everywhere: Spirit prints "5m"/"3h"/"12 Mar" relative to the clock, which would drift
between recordings; every date filter it uses is replaced by a fixed "12 Mar 2024, 14:05" rendering."""
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

"""Load the forum's seed data (a JSON file written from ``mag_dataset.sites.forum.seed.build()``) into Spirit.

Run with the site's venv python inside ``<home>/app`` after ``migrate``::

    python load_seed.py seed.json

Everything goes through Spirit's models (comment HTML by Spirit's own Markdown renderer), with
the seed's absolute dates; ``last_seen``/``date_joined`` are fixed too, so the pages show no
clock-dependent value of the seed.
"""
import datetime as dt
import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "magforum.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402
from django.db import transaction  # noqa: E402
from django.utils.text import slugify  # noqa: E402
from djconfig.models import Config  # noqa: E402
from spirit.category.models import Category  # noqa: E402
from spirit.comment.like.models import CommentLike  # noqa: E402
from spirit.comment.models import Comment  # noqa: E402
from spirit.core.conf import settings as st_settings  # noqa: E402
from spirit.core.utils.markdown import Markdown  # noqa: E402
from spirit.topic.models import Topic  # noqa: E402
from spirit.topic.private.models import TopicPrivate  # noqa: E402
from spirit.user.models import UserProfile  # noqa: E402


def when(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso).replace(tzinfo=dt.timezone.utc)


def main(path: str, password: str) -> None:
    seed = json.loads(open(path).read())
    User = get_user_model()
    start = when(min(t["posts"][0]["date"] for t in seed["topics"])) - dt.timedelta(days=30)
    users = {}
    for i, u in enumerate(seed["users"]):
        user = User.objects.create_user(u["username"], f"{u['username']}@forum.test", password)
        user.password = make_password(password, salt=f"mag{i:02d}seed")  # fixed salt: identical rows per setup
        user.is_superuser = user.is_staff = u["role"] == "admin"
        user.date_joined = start + dt.timedelta(days=i)
        user.save()
        UserProfile.objects.filter(user=user).update(
            nickname=u["username"], location=u["location"], is_verified=True,
            is_administrator=u["role"] == "admin", is_moderator=u["role"] in ("admin", "moderator"))
        users[u["username"]] = user

    boards = {}
    for i, b in enumerate(seed["boards"]):
        if i == 0:  # Spirit's migration made "Uncategorized" (pk 2): it becomes the first board
            cat = Category.objects.get(pk=2)
            cat.title, cat.description, cat.color, cat.sort = b["title"], b["description"], b["color"], i
            cat.slug = slugify(b["title"])
            cat.save()
        else:
            cat = Category.objects.create(title=b["title"], description=b["description"], color=b["color"], sort=i)
        boards[b["title"]] = cat

    md = Markdown()
    comments = []  # (topic index, post index) -> Comment, in seed order
    for ti, t in enumerate(seed["topics"]):
        posts = t["posts"]
        topic = Topic.objects.create(
            user=users[posts[0]["author"]], category=boards[t["board"]], title=t["title"],
            date=when(posts[0]["date"]), last_active=when(posts[-1]["date"]), reindex_at=when(posts[-1]["date"]),
            is_pinned=t["pinned"], is_closed=t["closed"], comment_count=len(posts),
            view_count=7 * len(posts) + 3 * ti % 50)
        row = []
        for p in posts:
            row.append(Comment.objects.create(user=users[p["author"]], topic=topic, comment=p["text"],
                                              comment_html=md.render(p["text"]), date=when(p["date"]),
                                              ip_address="127.0.0.1"))
        comments.append(row)
    for lk in seed["likes"]:
        c = comments[lk["topic"]][lk["post"]]
        CommentLike.objects.create(user=users[lk["user"]], comment=c, date=c.date + dt.timedelta(hours=2))
    for row in comments:
        for c in row:
            Comment.objects.filter(pk=c.pk).update(likes_count=CommentLike.objects.filter(comment=c).count())

    private_cat = Category.objects.get(pk=st_settings.ST_TOPIC_PRIVATE_CATEGORY_PK)
    for pt in seed["private"]:
        posts = pt["posts"]
        topic = Topic.objects.create(user=users[pt["author"]], category=private_cat, title=pt["title"],
                                     date=when(posts[0]["date"]), last_active=when(posts[-1]["date"]),
                                     reindex_at=when(posts[-1]["date"]), comment_count=len(posts))
        for name in (pt["author"], *pt["invited"]):
            TopicPrivate.objects.create(user=users[name], topic=topic, date=when(posts[0]["date"]))
        for p in posts:
            Comment.objects.create(user=users[p["author"]], topic=topic, comment=p["text"],
                                   comment_html=md.render(p["text"]), date=when(p["date"]), ip_address="127.0.0.1")

    for name, user in users.items():
        UserProfile.objects.filter(user=user).update(
            topic_count=Topic.objects.filter(user=user).exclude(category=private_cat).count(),
            comment_count=Comment.objects.filter(user=user).exclude(topic__category=private_cat).count(),
            last_seen=when(seed["topics"][-1]["posts"][-1]["date"]))
    Category.objects.update(reindex_at=start)  # the migration's categories were stamped with the clock
    Config.objects.update_or_create(key="site_name", defaults={"value": "MAG Forum"})
    Config.objects.update_or_create(key="site_description",
                                    defaults={"value": "A community forum about computing"})


if __name__ == "__main__":
    with transaction.atomic():
        main(sys.argv[1], sys.argv[2])

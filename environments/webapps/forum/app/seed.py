"""Load the forum's generated content (a JSON file) into a migrated Misago database, in bulk.

Run by ForumSite.build_golden with the forum's own Python:
``python seed.py CONTENT.json SESSIONS.json`` (``FORUM_DB_NAME`` names the database). Writes
the seeded login sessions (username -> session key) to SESSIONS.json.
"""

import hashlib
import html
import json
import os
import sys
from datetime import datetime, timezone

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forumproject.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402
from django.contrib.sessions.backends.db import SessionStore  # noqa: E402
from django.contrib.sessions.models import Session  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from misago.acl.models import Role  # noqa: E402
from misago.categories.models import Category, CategoryRole, RoleCategoryACL  # noqa: E402
from misago.conf import settings  # noqa: E402
from misago.threads.checksums import update_post_checksum  # noqa: E402
from misago.threads.models import Post, PostLike, Thread  # noqa: E402
from misago.users.models import Rank  # noqa: E402

User = get_user_model()


def when(stamp):
    return datetime.fromisoformat(stamp)


def seed_categories(content):
    """The content's categories under Misago's root (the first one is Misago's renamed default)."""
    root = Category.objects.root_category()
    first = Category.objects.get(slug="first-category")
    moderator_role = Role.objects.get(name="Moderator")
    moderator_category_role = CategoryRole.objects.get(name="Moderator")
    acls = list(first.category_role_set.all())
    by_slug = {}
    for index, data in enumerate(content["categories"]):
        category = first if index == 0 else Category()
        category.set_name(data["name"])
        category.description = data["description"]
        if index == 0:
            category.save()
        else:
            category.insert_at(root, position="last-child", save=True)
            RoleCategoryACL.objects.bulk_create(
                RoleCategoryACL(role_id=acl.role_id, category=category, category_role_id=acl.category_role_id)
                for acl in acls
            )
        RoleCategoryACL.objects.update_or_create(
            role=moderator_role, category=category, defaults={"category_role": moderator_category_role}
        )
        if category.slug != data["slug"] or category.id != data["id"]:
            raise SystemExit(f"category {category.id} {category.slug!r} != generated {data['id']} {data['slug']!r}")
        by_slug[data["slug"]] = category
    return by_slug


def seed_users(content):
    """Users (an admin, moderators, members), all with the content's password."""
    moderator_role = Role.objects.get(name="Moderator")
    team = Rank.objects.get(slug="forum-team")
    users = {}
    for data in content["users"]:
        extra = {"joined_on": when(data["joined"])}
        if data["role"] == "admin":
            user = User.objects.create_superuser(data["username"], data["email"], None, **extra)
        else:
            if data["role"] == "moderator":
                extra["rank"] = team
            user = User.objects.create_user(data["username"], data["email"], None, **extra)
        if data["role"] != "member":
            user.roles.add(moderator_role)
            user.update_acl_key()
            user.save(update_fields=["acl_key"])
        if user.slug != data["slug"] or user.id != data["id"]:
            raise SystemExit(f"user {user.id} {user.slug!r} != generated {data['id']} {data['slug']!r}")
        users[data["username"]] = user
    # Misago's blank avatar for everyone (drawing 240 avatars into media/ would be slow, and shared).
    blank = settings.STATIC_URL + settings.MISAGO_BLANK_AVATAR
    avatars = [{"size": size, "url": blank} for size in settings.MISAGO_AVATARS_SIZES]
    User.objects.update(password=make_password(content["password"]), avatars=avatars)
    for user in User.objects.all():
        users[user.username] = user
    return users


def seed_threads(content, categories, users):
    """Threads, their posts and likes, with ids as generated, and every counter Misago keeps."""
    threads, posts, likes = [], [], []
    user_posts, user_threads = {}, {}
    for data in content["threads"]:
        category = categories[data["category"]]
        first, last = data["posts"][0], data["posts"][-1]
        starter, last_poster = users[first["author"]], users[last["author"]]
        thread = Thread(
            id=data["id"],
            category=category,
            replies=len(data["posts"]) - 1,
            started_on=when(first["posted"]),
            last_post_on=when(last["posted"]),
            first_post_id=first["id"],
            starter=starter,
            starter_name=starter.username,
            starter_slug=starter.slug,
            last_post_id=last["id"],
            last_poster=last_poster,
            last_poster_name=last_poster.username,
            last_poster_slug=last_poster.slug,
            weight=Thread.WEIGHT_PINNED if data["pinned"] else Thread.WEIGHT_DEFAULT,
            is_closed=data["closed"],
        )
        thread.set_title(data["title"])
        if thread.slug != data["slug"]:
            raise SystemExit(f"thread slug {thread.slug!r} != generated {data['slug']!r}")
        threads.append(thread)
        user_threads[starter.id] = user_threads.get(starter.id, 0) + 1
        for index, post_data in enumerate(data["posts"]):
            poster = users[post_data["author"]]
            user_posts[poster.id] = user_posts.get(poster.id, 0) + 1
            posted = when(post_data["posted"])
            post = Post(
                id=post_data["id"],
                category=category,
                thread=thread,
                poster=poster,
                poster_name=poster.username,
                original=post_data["text"],
                parsed=f"<p>{html.escape(post_data['text'])}</p>",
                posted_on=posted,
                updated_on=posted,
                hidden_on=posted,
                likes=len(post_data["likes"]),
            )
            post.set_search_document(data["title"] if index == 0 else None)
            update_post_checksum(post)
            likers = [users[name] for name in post_data["likes"]]
            # Misago shows the newest likes first (PostLike orders by -id).
            post.last_likes = [{"id": u.id, "username": u.username} for u in reversed(likers)][:4]
            posts.append(post)
            likes += [
                PostLike(
                    category=category,
                    thread=thread,
                    post=post,
                    liker=liker,
                    liker_name=liker.username,
                    liker_slug=liker.slug,
                    liked_on=posted,
                )
                for liker in likers
            ]
    with transaction.atomic():  # first/last post ids point forward: Django's FKs are deferred
        Thread.objects.bulk_create(threads, batch_size=1000)
        Post.objects.bulk_create(posts, batch_size=1000)
    PostLike.objects.bulk_create(likes, batch_size=2000)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE misago_threads_post SET search_vector = to_tsvector(%s, search_document)",
            ["simple"],
        )
        for table in ("misago_threads_thread", "misago_threads_post"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    for user in users.values():
        user.posts, user.threads = user_posts.get(user.id, 0), user_threads.get(user.id, 0)
    User.objects.bulk_update(users.values(), ["posts", "threads"])
    for category in categories.values():
        category.synchronize()
        category.save()


def seed_sessions(content, users, seed):
    """One signed-in session per user, with a key derived from the seed (the same in every tenant)."""
    keys = {}
    expires = datetime(2099, 1, 1, tzinfo=timezone.utc)
    for data in content["users"]:
        user = users[data["username"]]
        key = hashlib.sha256(f"forum-session-{seed}-{user.username}".encode()).hexdigest()[:32]
        data = {
            SESSION_KEY: str(user.pk),
            BACKEND_SESSION_KEY: "misago.users.authbackends.MisagoBackend",
            HASH_SESSION_KEY: user.get_session_auth_hash(),
        }
        Session.objects.create(session_key=key, session_data=SessionStore().encode(data), expire_date=expires)
        keys[user.username] = key
    return keys


def main():
    content_file, sessions_file, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(content_file) as handle:
        content = json.load(handle)
    categories = seed_categories(content)
    users = seed_users(content)
    seed_threads(content, categories, users)
    keys = seed_sessions(content, users, seed)
    with open(sessions_file, "w") as handle:
        json.dump(keys, handle)


if __name__ == "__main__":
    main()

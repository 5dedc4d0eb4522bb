"""The forum's task templates (Misago): WebArena's Reddit/Postmill tasks on threads, users and posts.

Tasks name threads by title (titles are unique in the generated forum) and users by username.
Checkers read the tenant's database (``forum_t<N>``) when the episode ends: an info task's answer
is compared with the value in the database, a navigation task's final URL with the object's
URL built from its database row, a change task's rows with the requested change. Misago saves
posts, likes and moderation through background requests of its React front end, so a change
checker asks again for a moment (:func:`~agentgym.environments.webapps.tasks.settled`) before scoring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, cast

from agentgym.environments.webapps.forum.content import words
from agentgym.environments.webapps.forum.site import ForumSite
from agentgym.environments.webapps.tasks import (
    Answer,
    AnswerFromPage,
    Click,
    Fill,
    Goto,
    Outcome,
    Picker,
    Step,
    Task,
    Template,
    exact_match,
    normalise,
    number_match,
    settled,
)

FORUM = "forum"

# Selectors of Misago 0.39's React pages (the oracle plans act through them).
THREAD_AUTHOR = ".thread-user-card-header a.item-title"
THREAD_REPLIES = ".page-header .threads-replies"
TOOLBAR_PRIMARY = "nav.toolbar .btn-primary"  # "Reply" on a thread, "Start thread" on a category
EDITOR_TEXT = "textarea.markup-editor-textarea"
EDITOR_TITLE = ".posting-dialog-thread-title input"
EDITOR_SUBMIT = ".markup-editor-footer .btn-primary"
THREAD_OPTIONS = ".page-header .dropdown-toggle"
PROFILE_FEED_HEADING = ".profile-feed nav.toolbar h3"
PROFILE_FIRST_THREAD = ".profile-feed .post-heading a.item-title"
MODERATION = {
    "close": ("Close", "text=lock_outlineClose"),
    "pin": ("Pin (in its category)", "text=bookmark_borderPin in category"),
}

Row = tuple[Any, ...]


# ---- content and database helpers -----------------------------------------------------------


def forum(pick: Picker) -> Mapping[str, Any]:
    """The forum's generated content."""
    return pick.content[FORUM]


def thread_path(thread: Mapping[str, Any]) -> str:
    return f"/t/{thread['slug']}/{thread['id']}/"


def user_path(user: Mapping[str, Any]) -> str:
    return f"/u/{user['slug']}/{user['id']}/"


def users_by_name(pick: Picker) -> dict[str, Mapping[str, Any]]:
    return {user["username"]: user for user in forum(pick)["users"]}


def members(pick: Picker) -> list[Mapping[str, Any]]:
    return [user for user in forum(pick)["users"] if user["role"] == "member"]


def category_of(pick: Picker, slug: str) -> Mapping[str, Any]:
    return next(category for category in forum(pick)["categories"] if category["slug"] == slug)


def pick_thread(pick: Picker, accept: Callable[[Mapping[str, Any]], bool] = lambda thread: True) -> Mapping[str, Any]:
    """A thread of this split (by title) that ``accept`` allows."""
    return pick.choice([t for t in forum(pick)["threads"] if accept(t)], key=lambda thread: thread["title"])


def query(outcome: Outcome, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Rows of ``sql`` on the tenant's forum database."""
    site = cast(ForumSite, outcome.sites[FORUM])
    with site.connect(outcome.tenant) as connection:
        return connection.execute(sql, params).fetchall()


_THREAD = "SELECT id, slug, starter_name, replies, category_id, is_closed, weight FROM misago_threads_thread"


def thread_row(outcome: Outcome, title: str) -> Row | None:
    rows = query(outcome, _THREAD + " WHERE title = %s ORDER BY id LIMIT 1", (title,))
    return rows[0] if rows else None


def posts_of(outcome: Outcome, title: str, author: str | None = None) -> list[Row]:
    """(id, poster_name, original, likes) of the thread's posts (by ``author``), oldest first."""
    sql = (
        "SELECT p.id, p.poster_name, p.original, p.likes FROM misago_threads_post p "
        "JOIN misago_threads_thread t ON t.id = p.thread_id WHERE t.title = %s AND NOT p.is_event"
    )
    params: list[Any] = [title]
    if author is not None:
        sql += " AND p.poster_name = %s"
        params.append(author)
    return query(outcome, sql + " ORDER BY p.id", params)


def path_starts(outcome: Outcome, prefix: str | None) -> float:
    path = outcome.path_on(FORUM)
    return 1.0 if prefix is not None and path is not None and path.startswith(prefix) else 0.0


class ForumTemplate(Template):
    """A template on the forum alone."""

    sites: ClassVar[tuple[str, ...]] = (FORUM,)


# ---- information seeking ------------------------------------------------------------------------


class ThreadStarter(ForumTemplate):
    id = "forum/thread-starter"
    kind = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        thread = pick_thread(pick)
        return {"title": thread["title"], "path": thread_path(thread)}, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"]), AnswerFromPage(THREAD_AUTHOR)]

    def check(self, task: Task, outcome: Outcome) -> float:
        row = thread_row(outcome, task.params["title"])
        return float(row is not None and exact_match(outcome.answer, row[2]))


class ThreadReplies(ForumTemplate):
    id = "forum/thread-replies"
    kind = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        # Misago shows no count on a thread without replies (the plan reads the count on the page).
        thread = pick_thread(pick, lambda thread: len(thread["posts"]) > 1)
        return {"title": thread["title"], "path": thread_path(thread)}, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"]), AnswerFromPage(THREAD_REPLIES, r"(\d+)")]

    def check(self, task: Task, outcome: Outcome) -> float:
        row = thread_row(outcome, task.params["title"])
        return float(row is not None and number_match(outcome.answer, row[3]))


class MostLikedPost(ForumTemplate):
    id = "forum/most-liked-post"
    kind = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        def single_top(thread: Mapping[str, Any]) -> bool:
            likes = sorted((len(post["likes"]) for post in thread["posts"]), reverse=True)
            return len(likes) > 1 and likes[0] > likes[1]

        thread = pick_thread(pick, single_top)
        top = max(thread["posts"], key=lambda post: len(post["likes"]))
        params = {"title": thread["title"], "path": thread_path(thread), "author": top["author"]}
        return params, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        # The likes are on the thread's page ("X, Y and 3 other users like this"); the plan knows the count.
        return [Goto(FORUM, task.params["path"]), Answer(task.params["author"])]

    def check(self, task: Task, outcome: Outcome) -> float:
        posts = posts_of(outcome, task.params["title"])
        if not posts:
            return 0.0
        most = max(post[3] for post in posts)
        return float(any(exact_match(outcome.answer, post[1]) for post in posts if post[3] == most))


class UserPostCount(ForumTemplate):
    id = "forum/user-post-count"
    kind = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        user = pick.choice(members(pick), key=lambda user: user["username"])
        return {"username": user["username"], "path": user_path(user)}, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"] + "posts/"), AnswerFromPage(PROFILE_FEED_HEADING, r"posted (\d+)")]

    def check(self, task: Task, outcome: Outcome) -> float:
        rows = query(outcome, "SELECT posts FROM misago_users_user WHERE username = %s", (task.params["username"],))
        return float(bool(rows) and number_match(outcome.answer, rows[0][0]))


class UserLatestThread(ForumTemplate):
    id = "forum/user-latest-thread"
    kind = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        starters = {thread["starter"] for thread in forum(pick)["threads"]}
        user = pick.choice([u for u in members(pick) if u["username"] in starters], key=lambda u: u["username"])
        return {"username": user["username"], "path": user_path(user)}, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"] + "threads/"), AnswerFromPage(PROFILE_FIRST_THREAD)]

    def check(self, task: Task, outcome: Outcome) -> float:
        rows = query(
            outcome,
            "SELECT title FROM misago_threads_thread WHERE starter_name = %s ORDER BY started_on DESC, id DESC LIMIT 1",
            (task.params["username"],),
        )
        return float(bool(rows) and exact_match(outcome.answer, rows[0][0]))


# ---- navigation ---------------------------------------------------------------------------------


class OpenThread(ForumTemplate):
    id = "forum/open-thread"
    kind = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        thread = pick_thread(pick)
        category = category_of(pick, thread["category"])
        params = {"title": thread["title"], "category": category["name"], "path": thread_path(thread)}
        return params, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"]), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        row = thread_row(outcome, task.params["title"])
        return path_starts(outcome, None if row is None else f"/t/{row[1]}/{row[0]}/")


class OpenReplierProfile(ForumTemplate):
    id = "forum/open-replier-profile"
    kind = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        thread = pick_thread(pick, lambda thread: len(thread["posts"]) > 1)
        params = {"title": thread["title"], "path": thread_path(thread), "post": thread["posts"][1]["id"]}
        return params, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [
            Goto(FORUM, task.params["path"]),
            Click(f"#post-{task.params['post']} .post-side a.item-title"),
            Answer("done"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        posts = posts_of(outcome, task.params["title"])
        if len(posts) < 2:
            return 0.0
        rows = query(outcome, "SELECT id, slug FROM misago_users_user WHERE username = %s", (posts[1][1],))
        return path_starts(outcome, f"/u/{rows[0][1]}/{rows[0][0]}/" if rows else None)


class OpenCategory(ForumTemplate):
    id = "forum/open-category"
    kind = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        category = pick.choice(forum(pick)["categories"], shared=True)
        params = {"category": category["name"], "path": f"/c/{category['slug']}/{category['id']}/"}
        return params, (FORUM, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(FORUM, "/categories/"), Click(f".category-main a[href='{task.params['path']}']"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        rows = query(
            outcome,
            "SELECT id, slug FROM misago_categories_category WHERE name = %s AND special_role IS NULL",
            (task.params["category"],),
        )
        return path_starts(outcome, f"/c/{rows[0][1]}/{rows[0][0]}/" if rows else None)


# ---- content changes ----------------------------------------------------------------------------


def task_text(pick: Picker, key: str, subject: str) -> str:
    """One of the data file's task texts (``task_replies``, ``task_titles``) about ``subject``."""
    return str(pick.rng.choice(words()[key])).format(subject=subject)


class Reply(ForumTemplate):
    id = "forum/reply"
    kind = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        thread = pick_thread(pick, lambda thread: not thread["closed"])
        user = pick.choice([u for u in members(pick) if u["username"] != thread["starter"]], shared=True)
        text = task_text(pick, "task_replies", thread["subject"])
        params = {"title": thread["title"], "path": thread_path(thread), "text": text, "user": user["username"]}
        return params, (FORUM, "/"), {FORUM: user["username"]}

    def _editing(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"]), Click(TOOLBAR_PRIMARY), Fill(EDITOR_TEXT, task.params["text"])]

    def oracle(self, task: Task) -> list[Step]:
        return [*self._editing(task), Click(EDITOR_SUBMIT), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        return [*self._editing(task), Answer("done")]  # typed, never posted

    def check(self, task: Task, outcome: Outcome) -> float:
        def score() -> float:
            posts = posts_of(outcome, task.params["title"], task.params["user"])
            return float(any(normalise(post[2]) == normalise(task.params["text"]) for post in posts))

        return settled(score)


class NewThread(ForumTemplate):
    id = "forum/new-thread"
    kind = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        data = words()
        subjects = [(c["name"], s) for c in data["categories"] for s in c["subjects"]]
        name, subject = pick.choice(subjects, key=lambda pair: pair[1])
        category = next(c for c in forum(pick)["categories"] if c["name"] == name)
        title = task_text(pick, "task_titles", subject)
        text = f"{pick.rng.choice(data['opening_sentences'])} {pick.rng.choice(data['closing_sentences'])}"
        user = pick.choice(members(pick), shared=True)
        params = {
            "category": name,
            "category_slug": category["slug"],
            "path": f"/c/{category['slug']}/{category['id']}/",
            "title": title,
            "text": text.format(subject=subject),
            "user": user["username"],
        }
        return params, (FORUM, "/"), {FORUM: user["username"]}

    def _editing(self, task: Task) -> list[Step]:
        return [
            Goto(FORUM, task.params["path"]),
            Click(TOOLBAR_PRIMARY),
            Fill(EDITOR_TITLE, task.params["title"]),
            Fill(EDITOR_TEXT, task.params["text"]),
        ]

    def oracle(self, task: Task) -> list[Step]:
        return [*self._editing(task), Click(EDITOR_SUBMIT), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        return [*self._editing(task), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        """1.0: the user's thread with this title, category and text; 0.5: the title is right, the rest is not."""

        def score() -> float:
            rows = query(
                outcome,
                "SELECT c.slug, p.original FROM misago_threads_thread t "
                "JOIN misago_categories_category c ON c.id = t.category_id "
                "JOIN misago_threads_post p ON p.id = t.first_post_id "
                "WHERE t.title = %s AND t.starter_name = %s",
                (task.params["title"], task.params["user"]),
            )
            right = [
                slug == task.params["category_slug"] and normalise(text) == normalise(task.params["text"])
                for slug, text in rows
            ]
            return 1.0 if any(right) else 0.5 if rows else 0.0

        return settled(score)


class LikePost(ForumTemplate):
    id = "forum/like-post"
    kind = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        candidates = [
            (thread, post)
            for thread in forum(pick)["threads"]
            for post in thread["posts"]
            if sum(other["author"] == post["author"] for other in thread["posts"]) == 1
        ]
        thread, post = pick.choice(candidates, key=lambda pair: pair[0]["title"])
        taken = {post["author"], *post["likes"]}
        user = pick.choice([u for u in members(pick) if u["username"] not in taken], shared=True)
        params = {
            "title": thread["title"],
            "path": thread_path(thread),
            "author": post["author"],
            "post": post["id"],
            "user": user["username"],
        }
        return params, (FORUM, "/"), {FORUM: user["username"]}

    def oracle(self, task: Task) -> list[Step]:
        like = f"#post-{task.params['post']} .post-footer button.btn-default.pull-left"
        return [Goto(FORUM, task.params["path"]), Click(like), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"]), Answer("done")]  # found the post, never liked it

    def check(self, task: Task, outcome: Outcome) -> float:
        def score() -> float:
            rows = query(
                outcome,
                "SELECT p.likes, (SELECT count(*) FROM misago_threads_postlike l WHERE l.post_id = p.id), "
                "EXISTS (SELECT 1 FROM misago_threads_postlike l WHERE l.post_id = p.id AND l.liker_name = %s) "
                "FROM misago_threads_post p JOIN misago_threads_thread t ON t.id = p.thread_id "
                "WHERE t.title = %s AND p.poster_name = %s",
                (task.params["user"], task.params["title"], task.params["author"]),
            )
            return float(len(rows) == 1 and rows[0][2] and rows[0][0] == rows[0][1])

        return settled(score)


class EditPost(ForumTemplate):
    id = "forum/edit-post"
    kind = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        candidates = [
            (thread, post)
            for thread in forum(pick)["threads"]
            if not thread["closed"]
            for post in thread["posts"][1:]
            if sum(other["author"] == post["author"] for other in thread["posts"]) == 1
        ]
        thread, post = pick.choice(candidates, key=lambda pair: pair[0]["title"])
        text = task_text(pick, "task_replies", thread["subject"])
        params = {
            "title": thread["title"],
            "path": thread_path(thread),
            "post": post["id"],
            "text": text,
            "user": post["author"],
        }
        return params, (FORUM, "/"), {FORUM: post["author"]}

    def _editing(self, task: Task) -> list[Step]:
        edit = f"#post-{task.params['post']} .post-footer button.btn-default.hidden-xs"
        return [Goto(FORUM, task.params["path"]), Click(edit), Fill(EDITOR_TEXT, task.params["text"])]

    def oracle(self, task: Task) -> list[Step]:
        return [*self._editing(task), Click(EDITOR_SUBMIT), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        return [*self._editing(task), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        def score() -> float:
            posts = posts_of(outcome, task.params["title"], task.params["user"])
            return float(len(posts) == 1 and normalise(posts[0][2]) == normalise(task.params["text"]))

        return settled(score)


class ModerateThread(ForumTemplate):
    id = "forum/moderate-thread"
    kind = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        thread = pick_thread(pick, lambda thread: not thread["closed"] and not thread["pinned"])
        action = pick.rng.choice(sorted(MODERATION))
        moderators = [user for user in forum(pick)["users"] if user["role"] == "moderator"]
        moderator = pick.choice(moderators, shared=True)
        params = {
            "title": thread["title"],
            "path": thread_path(thread),
            "action": action,
            "action_text": MODERATION[action][0],
            "user": moderator["username"],
        }
        return params, (FORUM, "/"), {FORUM: moderator["username"]}

    def oracle(self, task: Task) -> list[Step]:
        return [*self.half_done(task)[:-1], Click(MODERATION[task.params["action"]][1]), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        return [Goto(FORUM, task.params["path"]), Click(THREAD_OPTIONS), Answer("done")]  # menu open, no action

    def check(self, task: Task, outcome: Outcome) -> float:
        def score() -> float:
            row = thread_row(outcome, task.params["title"])
            if row is None:
                return 0.0
            closed, weight = row[5], row[6]
            return float(closed if task.params["action"] == "close" else weight == 1 and not closed)

        return settled(score)


TEMPLATES: list[Template] = [
    ThreadStarter(),
    ThreadReplies(),
    MostLikedPost(),
    UserPostCount(),
    UserLatestThread(),
    OpenThread(),
    OpenReplierProfile(),
    OpenCategory(),
    Reply(),
    NewThread(),
    LikePost(),
    EditPost(),
    ModerateThread(),
]

"""Load the tracker's seed into a fresh Trac environment, through Trac's own model API.

Run by the site's venv Python (it imports Trac, not mag_dataset)::

    venv/bin/python trac_seed.py ENV_DIR SEED_JSON

SEED_JSON is :meth:`mag_dataset.sites.tracker.data.SeedData.to_json`. Prints one JSON line of
counts. Everything that Trac stamps with the wall clock (initenv's wiki pages, sessions) is
set to the seed's fixed epoch afterwards, so two setups give the same database.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime


def _when(s: str | None) -> datetime | None:
    return datetime.fromisoformat(s) if s else None


def _load_components(env, seed: dict) -> None:
    """Components, milestones and versions (initenv's examples removed first)."""
    from trac.ticket.model import Component, Milestone, Version

    with env.db_transaction as db:
        for table in ("component", "milestone", "version"):
            db(f"DELETE FROM {table}")
    for name, owner in seed["components"].items():
        c = Component(env)
        c.name, c.owner, c.description = name, owner, f"Everything about the {name} of Lighthouse."
        c.insert()
    for name, m in seed["milestones"].items():
        ms = Milestone(env)
        ms.name, ms.due, ms.completed, ms.description = name, _when(m["due"]), _when(m["completed"]), m["description"]
        ms.insert()
    for name, t in seed["versions"].items():
        v = Version(env)
        v.name, v.time, v.description = name, _when(t), f"Release {name}."
        v.insert()


def _load_users(env, seed: dict) -> None:
    """Users, roles and their permissions."""
    from acct_mgr.api import AccountManager
    from trac.perm import PermissionSystem
    from trac.web.session import DetachedSession

    ps = PermissionSystem(env)
    with env.db_transaction as db:
        db("DELETE FROM permission WHERE username='authenticated'")
    for action in ("TICKET_CREATE", "TICKET_APPEND", "TICKET_CHGPROP"):
        ps.grant_permission("authenticated", action)
    for action in ("TICKET_MODIFY", "TICKET_BATCH_MODIFY", "WIKI_CREATE", "WIKI_MODIFY", "MILESTONE_MODIFY",
                   "REPORT_CREATE", "REPORT_MODIFY"):
        ps.grant_permission("developer", action)
    ps.grant_permission("reporter", "TICKET_CREATE")
    ps.grant_permission("admin", "TRAC_ADMIN")
    am = AccountManager(env)
    for user, u in seed["users"].items():
        s = DetachedSession(env, user)  # before the password: saving a new session clears its attributes
        s["name"], s["email"] = u["name"], u["email"]
        s.save()
        am.set_password(user, u["password"])
        ps.grant_permission(user, u["role"])


def _load_tickets(env, seed: dict) -> int:
    """Tickets, each with its history; returns the number of changes."""
    from trac.ticket.model import Ticket

    n_changes = 0
    for t in seed["tickets"]:
        tk = Ticket(env)
        for k, v in t["initial"].items():
            tk[k] = v
        tid = tk.insert(when=_when(t["created"]))
        if tid != t["id"]:
            raise SystemExit(f"ticket id {tid} != seeded id {t['id']}")
        for ch in t["changes"]:
            tk = Ticket(env, tid)
            for k, (_, new) in ch["fields"].items():
                tk[k] = new
            tk.save_changes(ch["author"], ch["comment"], when=_when(ch["when"]))
            n_changes += 1
    return n_changes


def _load_wiki(env, seed: dict) -> int:
    """Our wiki pages with their versions (initenv's WikiStart replaced); returns the versions saved."""
    from trac.wiki.model import WikiPage

    WikiPage(env, "WikiStart").delete()
    versions = 0
    for name, vs in seed["wiki"].items():
        for v in vs:
            page = WikiPage(env, name)
            page.text = v["text"]
            page.save(v["author"], v["comment"], _when(v["when"]))
            versions += 1
    return versions


def _fix_clock(env, epoch: datetime) -> None:
    """initenv's help pages and the sessions get the seed's fixed epoch; no login cookie is kept."""
    from trac.util.datefmt import to_utimestamp

    with env.db_transaction as db:
        db("UPDATE wiki SET time=%s WHERE author='trac'", (to_utimestamp(epoch),))
        db("UPDATE session SET last_visit=%s", (int(epoch.timestamp()),))
        db("DELETE FROM auth_cookie")


def main(env_dir: str, seed_file: str) -> None:
    from trac.env import Environment

    seed = json.load(open(seed_file, encoding="utf-8"))
    epoch = datetime.fromisoformat(seed["epoch"])
    env = Environment(env_dir)
    # a one-off bulk load: no fsync per commit (this process only; trac.ini keeps the default)
    env.config.set("trac", "database", "sqlite:db/trac.db?synchronous=off")
    _load_components(env, seed)
    _load_users(env, seed)
    n_changes = _load_tickets(env, seed)
    versions = _load_wiki(env, seed)
    _fix_clock(env, epoch)
    env.shutdown()
    print(json.dumps({"tickets": len(seed["tickets"]), "ticket_changes": n_changes,
                      "components": len(seed["components"]), "milestones": len(seed["milestones"]),
                      "versions": len(seed["versions"]), "users": len(seed["users"]),
                      "wiki_pages": len(seed["wiki"]), "wiki_versions": versions}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""The shop site: django-oscar 4.2 storefront + staff dashboard (WebArena's shopping + shopping_admin).

Setup makes ``$MAG_SITES_HOME/shop/venv`` (pinned django-oscar, Django 5.2, Whoosh, sorl-thumbnail,
pycountry), copies the Django project of :mod:`mag_dataset.sites.shop.project` into ``app/``
(with Oscar's base template using its local jQuery, not the CDN), migrates a fresh SQLite
database, loads :func:`~mag_dataset.sites.shop.seed_data.seed_data` (320 products in 24
categories with PIL-drawn images, 200 customers, 420 orders dated in 2024, partners, offers, a
voucher) and builds the Whoosh search index. It is served by Django's threaded development
server on 127.0.0.1 (``--insecure`` serves Oscar's static files; the project's URLs serve the
images), on a clock that starts at the seed's fixed "now" (``shop_serve.py``). Django's cache
is a dummy cache and sessions live in the database, so restoring the SQLite file is exactly a
reset of what the server shows.

Usage::

    from mag_dataset.sites import site
    shop = site("shop"); shop.setup(print)   # mag sites setup --site shop
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

from mag_dataset.sites.base import ServerCommand, Site, SiteError, make_venv
from mag_dataset.sites.shop.seed_data import FROZEN_NOW

#: Exact versions installed into the site's venv (a pip freeze of a working install).
PINS: tuple[str, ...] = (
    "django-oscar==4.2.1", "Django==5.2.19", "django-haystack==3.4.0", "Whoosh==2.7.4", "sorl-thumbnail==13.4.0",
    "pycountry==26.2.16", "pillow==13.0.0", "django-extra-views==0.16.0", "django-phonenumber-field==8.5.0",
    "phonenumbers==9.0.43", "django-tables2==2.7.0", "django-treebeard==7.0.3", "django-widget-tweaks==1.5.1",
    "factory_boy==3.3.3", "Faker==40.63.0", "babel==2.19.0", "purl==1.6", "asgiref==3.13.0", "sqlparse==0.6.1",
    "six==1.17.0", "packaging==26.4",
)
_PROJECT = Path(__file__).resolve().parent / "project"
_CDN_JQUERY = '<script src="https://ajax.googleapis.com/ajax/libs/jquery/3.7.1/jquery.min.js"></script>'


class ShopSite(Site):
    """django-oscar shop with its staff dashboard, seeded with hundreds of products, customers and orders."""

    name = "shop"
    title = "Oscar shop + staff dashboard"
    app = "django-oscar 4.2.1 (Django 5.2, SQLite, Whoosh)"
    default_port = 8471
    version = "2"  # 2: own cookie names, MD5 password hashes
    health_path = "/catalogue/"
    users = {"admin@shop.test": "admin-pass-1", "emma.smith@shop.test": "customer-pass-1",
             "liam.johnson@shop.test": "customer-pass-2"}
    login_path = "/accounts/login/"  # Oscar's login form, by e-mail
    login_fields = ("login-username", "login-password")

    @property
    def python(self) -> Path:
        return self.home / "venv" / "bin" / "python"

    @property
    def app_dir(self) -> Path:
        return self.home / "app"

    def _env(self) -> dict[str, str]:
        return {"MAG_SHOP_HOME": str(self.home), "DJANGO_SETTINGS_MODULE": "settings", "PYTHONPATH": str(self.app_dir),
                "PYTHONDONTWRITEBYTECODE": "1"}

    def _run(self, argv: list[str], what: str, fix: str, timeout: float = 900) -> str:
        try:
            proc = subprocess.run(argv, cwd=str(self.app_dir), env={**os.environ, **self._env()}, capture_output=True,
                                  text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SiteError(f"site shop: {what} failed ({e}); {fix}") from None
        if proc.returncode != 0:
            tail = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()][-1:] or ["no output"]
            raise SiteError(f"site shop: {what} failed ({tail[0][:200]}); {fix}")
        return proc.stdout

    def _venv_ok(self) -> bool:
        if not self.python.is_file():
            return False
        want = ";".join(PINS)
        marker = self.home / "venv" / "mag_pins.txt"
        return marker.is_file() and marker.read_text() == want

    def install(self, log: Callable[[str], None]) -> None:
        self.app_dir.mkdir(parents=True, exist_ok=True)
        if not self._venv_ok():
            log("shop: creating venv and installing django-oscar (5-40 s)")
            make_venv(self.home / "venv", list(PINS), "shop")
            (self.home / "venv" / "mag_pins.txt").write_text(";".join(PINS))
        for f in ("settings.py", "urls.py", "seed.py"):
            shutil.copyfile(_PROJECT / f, self.app_dir / f)
        (self.app_dir / "manage.py").write_text(
            "import sys\nfrom django.core.management import execute_from_command_line\n"
            "execute_from_command_line(sys.argv)\n")
        base = self._oscar_template("oscar/base.html")
        if _CDN_JQUERY not in base:
            raise SiteError("site shop: Oscar's base template no longer loads jQuery from the expected CDN URL; "
                            "update mag_dataset/sites/shop to the installed Oscar version")
        local = '<script src="{% static "oscar/js/jquery/jquery.min.js" %}"></script>'
        base = base.replace(_CDN_JQUERY, local)
        base = "\n".join(ln for ln in base.splitlines() if "window.jQuery || document.write" not in ln) + "\n"
        # Agents click at the centre of an element's box: a link wrapped over two lines has a gap
        # there, so text links are boxes (inline-block) on every page.
        base = base.replace("</head>", "<style>a:not(.btn):not(.dropdown-item):not(.nav-link):not(.navbar-brand)"
                                       "{display: inline-block;}</style>\n    </head>", 1)
        out = self.app_dir / "templates" / "oscar" / "base.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(base)
        # the product page asks for a quantity (Oscar's default form hides it), as most shops do
        rel = "oscar/catalogue/partials/add_to_basket_form.html"
        form, single = self._oscar_template(rel), "{% basket_form request product as basket_form %}"
        if single not in form:
            raise SiteError(f"site shop: Oscar's {rel} changed; update mag_dataset/sites/shop to the installed Oscar")
        out = self.app_dir / "templates" / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(form.replace(single, "{% basket_form request product 'multiple' as basket_form %}"))

    def _oscar_template(self, rel: str) -> str:
        found = list((self.home / "venv" / "lib").glob(f"python3*/site-packages/oscar/templates/{rel}"))
        if not found:
            raise SiteError(f"site shop: Oscar's {rel} is missing from the venv; run `mag sites setup --site shop --force`")
        return found[0].read_text()

    def create_and_seed(self, log: Callable[[str], None]) -> dict[str, Any]:
        from mag_dataset.sites.shop.seed_data import seed_data

        for sub in ("db", "media", "search_index", "static"):
            shutil.rmtree(self.home / sub, ignore_errors=True)
        (self.home / "db").mkdir(parents=True)
        (self.home / "media").mkdir()
        fix = f"see the message; then run `mag sites setup --site shop --force` (home {self.home})"
        log("shop: migrating a fresh SQLite database (about 35 s)")
        self._run([str(self.python), "manage.py", "migrate", "--noinput", "-v", "0"], "migrate", fix)
        missing = self._oscar_static("oscar/img/image_not_found.jpg")
        shutil.copyfile(missing, self.home / "media" / "image_not_found.jpg")
        seed_file = self.app_dir / "seed.json"
        seed_file.write_text(json.dumps(seed_data(), sort_keys=True))
        log("shop: loading the seed data and building the search index")
        out = self._run([str(self.python), "seed.py", str(seed_file), str(self.port)], "seeding", fix)
        line = next((ln for ln in out.splitlines() if ln.startswith("SEEDED ")), None)
        if line is None:
            raise SiteError(f"site shop: the seeding script printed no counts; {fix}")
        return json.loads(line[len("SEEDED "):])

    def _oscar_static(self, rel: str) -> Path:
        found = list((self.home / "venv" / "lib").glob(f"python3*/site-packages/oscar/static/{rel}"))
        if not found:
            raise SiteError(f"site shop: Oscar's {rel} is missing from the venv; run `mag sites setup --site shop --force`")
        return found[0]

    def databases(self) -> list[Path]:
        return [self.home / "db" / "shop.sqlite3"]

    def server_command(self) -> ServerCommand:
        # on the seed's clock (shop_serve.py): the dashboard's hourly chart is the same on every run
        return ServerCommand(argv=(str(self.python), str(Path(__file__).resolve().parent / "shop_serve.py"),
                                   FROZEN_NOW.isoformat(), "runserver", f"127.0.0.1:{self.port}", "--noreload",
                                   "--insecure"),
                             env=self._env(), cwd=str(self.app_dir))

    def after_reset(self) -> None:
        """Bring the Whoosh search index in line with the database (seeded after a reset, the
        updated products re-indexed after a drift): :func:`~mag_dataset.sites.shop.drift.sync_search_index`."""
        from mag_dataset.sites.shop.drift import sync_search_index

        sync_search_index(self, self.python)

    def apply_drift(self, rng: Any, level: int) -> dict[str, int]:
        """Other customers' orders, staff's fulfilment, price and stock changes, reviews and new
        products: :func:`mag_dataset.sites.shop.drift.drift`."""
        from mag_dataset.sites.shop.drift import drift

        return drift(self, rng, level)



SITE = ShopSite

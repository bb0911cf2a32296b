"""The wiki site: Debian's MediaWiki 1.39 on SQLite, served by PHP's built-in server.

WebArena's wiki is a Wikipedia mirror; this one is MediaWiki itself with the classic Vector
skin, seeded with an encyclopedia of a fictional continent (:mod:`.seed`: 64 articles with
infoboxes, sections, links, categories and 2-5 revisions each by 7 users at fixed dates).

Everything lives under the site home (never /etc or /var/lib): ``app/LocalSettings.php``
(found through ``MW_CONFIG_FILE``), ``app/router.php`` (the ``php -S`` router: short
``/wiki/Title`` URLs, the installer blocked), ``db/`` (``meridian.sqlite``, the job queue and
``wikicache.sqlite``, which holds sessions) and ``cache/`` (localisation, rebuilt from the
code). Every other cache is off (``CACHE_NONE``), so a reset of the three SQLite files is the
whole state as the running server sees it. Nothing calls out: no pingback, no InstantCommons,
no uploads or e-mail, no external fonts (MediaWiki ships none).

Seeding runs the maintenance scripts with a frozen clock (``ConvertibleTimestamp::setFakeTime``
via ``auto_prepend_file``) so install-time rows have fixed dates; the articles come from an XML
dump (:func:`.seed.dump_xml`) with their own timestamps. Recent changes and the watchlist
show 10 years, so seeded edits (2023-2024) appear there whatever today's date is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, ClassVar

from mag_dataset.sites.base import ServerCommand, Site, SiteError

#: Where Debian's ``mediawiki`` package puts the code.
MW_DIR = Path("/usr/share/mediawiki")
#: Debian packages the site needs, and what proves each is installed.
PACKAGES: dict[str, str] = {
    "mediawiki": str(MW_DIR / "maintenance" / "install.php"),
    "php-cli": "php",
    "php-sqlite3": "pdo_sqlite",
    "php-mbstring": "mbstring",
    "php-xml": "dom",
    "php-intl": "intl",
}
DB_NAME = "meridian"
#: Extensions loaded from Debian's ``extensions-core``.
EXTENSIONS = ("ParserFunctions", "WikiEditor", "Cite")
#: PHP built-in server worker processes (it serves one request at a time per worker).
WORKERS = 4

_PREPEND = """<?php
// mag_dataset: a frozen clock for the maintenance runs of setup (fixed seed dates)
require_once '{mw}/vendor/autoload.php';
if ( getenv( 'MAG_FAKE_TIME' ) ) {{
	\\Wikimedia\\Timestamp\\ConvertibleTimestamp::setFakeTime( (int)getenv( 'MAG_FAKE_TIME' ) );
}}
"""

_ROUTER = """<?php
// mag_dataset: router of `php -S` for MediaWiki (short /wiki/ URLs; the web installer is blocked)
if ( !defined( 'MW_CONFIG_FILE' ) ) {{
	define( 'MW_CONFIG_FILE', '{settings}' );
}}
$path = parse_url( $_SERVER['REQUEST_URI'], PHP_URL_PATH );
if ( $path === '/mag-logo.svg' ) {{
	header( 'Content-Type: image/svg+xml' );
	readfile( '{logo}' );
	return true;
}}
if ( str_starts_with( $path, '/mw-config' ) || str_contains( $path, 'LocalSettings' ) ) {{
	http_response_code( 403 );
	echo 'Forbidden';
	return true;
}}
$entry = null;
if ( $path === '/' || str_starts_with( $path, '/wiki/' ) ) {{
	$entry = 'index.php';
}} elseif ( preg_match( '#^/(index|load|api|rest|opensearch_desc)\\.php(/|$)#', $path, $m ) ) {{
	$entry = $m[1] . '.php';
}}
if ( $entry === null ) {{
	return false; // a static file (skins, resources, extensions-core): php -S serves it
}}
chdir( '{mw}' );
$_SERVER['SCRIPT_NAME'] = '/' . $entry;
$_SERVER['SCRIPT_FILENAME'] = '{mw}/' . $entry;
$_SERVER['PHP_SELF'] = '/' . $entry;
require '{mw}/' . $entry;
return true;
"""

_SETTINGS = """<?php
# LocalSettings.php of the mag_dataset wiki site, written by `mag sites setup --site wiki`.
if ( !defined( 'MEDIAWIKI' ) ) {{
	exit;
}}
require_once "$IP/includes/PlatformSettings.php";

$wgSitename = "{sitename}";
$wgMetaNamespace = "{meta}";
$wgServer = getenv( 'MAG_WIKI_SERVER' ) ?: "http://127.0.0.1:{port}";
$wgCanonicalServer = $wgServer;
$wgScriptPath = "";
$wgArticlePath = "/wiki/$1";
$wgUsePathInfo = true;
$wgResourceBasePath = $wgScriptPath;
$wgLogos = [ '1x' => "/mag-logo.svg", 'icon' => "/mag-logo.svg" ];

$wgDBtype = "sqlite";
$wgDBserver = "";
$wgDBname = "{dbname}";
$wgDBuser = "";
$wgDBpassword = "";
$wgSQLiteDataDir = "{db}";
# No fsync: the state is reset from snapshots anyway, and seeding is 5x faster without it.
$wgDBservers = [ [
	'host' => '', 'dbname' => $wgDBname, 'user' => '', 'password' => '', 'type' => 'sqlite',
	'dbDirectory' => $wgSQLiteDataDir, 'load' => 1, 'flags' => DBO_DEFAULT,
	'variables' => [ 'synchronous' => 'OFF' ],
] ];
$wgObjectCaches[CACHE_DB] = [
	'class' => SqlBagOStuff::class,
	'loggroup' => 'SQLBagOStuff',
	'server' => [
		'type' => 'sqlite',
		'dbname' => 'wikicache',
		'tablePrefix' => '',
		'variables' => [ 'synchronous' => 'OFF' ],
		'dbDirectory' => $wgSQLiteDataDir,
		'trxMode' => 'IMMEDIATE',
		'flags' => 0
	]
];
$wgJobTypeConf['default'] = [
	'class' => 'JobQueueDB',
	'claimTTL' => 3600,
	'server' => [
		'type' => 'sqlite',
		'dbname' => "{{$wgDBname}}_jobqueue",
		'tablePrefix' => '',
		'variables' => [ 'synchronous' => 'OFF' ],
		'dbDirectory' => $wgSQLiteDataDir,
		'trxMode' => 'IMMEDIATE',
		'flags' => 0
	]
];
$wgSharedTables[] = "actor";

# Caches: none outside the SQLite files, so that a reset of those files is the whole state.
$wgMainCacheType = CACHE_NONE;
$wgParserCacheType = CACHE_NONE;
$wgMessageCacheType = CACHE_NONE;
$wgSessionCacheType = CACHE_DB;
$wgResourceLoaderUseObjectCacheForDeps = false;
$wgCacheDirectory = "{cache}";
$wgLocalisationCacheConf['store'] = 'array';
$wgUseFileCache = false;
$wgEnableSidebarCache = false;

# Nothing calls out.
$wgPingback = false;
$wgEnableUploads = false;
$wgUseInstantCommons = false;
$wgEnableEmail = false;
$wgEnableUserEmail = false;
$wgAllowExternalImages = false;
$wgAllowCopyUploads = false;
$wgRightsPage = "";
$wgRightsUrl = "";
$wgRightsText = "";
$wgRightsIcon = "";
unset( $wgFooterIcons['poweredby'] );

# Jobs run at setup (runJobs.php), not at random page views; dates in UTC.
$wgJobRunRate = 0;
$wgLanguageCode = "en";
$wgLocaltimezone = "UTC";
date_default_timezone_set( 'UTC' );
$wgDiff3 = "/usr/bin/diff3";

# Seeded edits are 2023-2024: keep them in recent changes and the watchlist whatever today is.
$wgRCMaxAge = 20 * 365 * 86400;
$wgRCLinkDays = [ 30, 365, 3650 ];
$wgDefaultUserOptions['rcdays'] = 3650;
$wgDefaultUserOptions['watchlistdays'] = 3650;
$wgDefaultUserOptions['rclimit'] = 50;

# Readers browse; accounts edit; moving pages is for administrators.
$wgGroupPermissions['*']['createaccount'] = false;
$wgGroupPermissions['*']['edit'] = false;
$wgGroupPermissions['user']['move'] = false;
$wgGroupPermissions['user']['move-subpages'] = false;
$wgGroupPermissions['user']['move-rootuserpages'] = false;
$wgGroupPermissions['user']['move-categorypages'] = false;

$wgSecretKey = "{secret}";
$wgAuthenticationTokenVersion = "1";
$wgUpgradeKey = "{upgrade}";

$wgDefaultSkin = "vector";
wfLoadSkin( 'Vector' );
$wgVectorResponsive = false;
$wgExtensionDirectory = "$IP/extensions-core";
$wgExtensionAssetsPath = "/extensions-core";
{extensions}
"""

_LOGO = """<svg xmlns="http://www.w3.org/2000/svg" width="135" height="135" viewBox="0 0 135 135">
<circle cx="67.5" cy="67.5" r="52" fill="#eaf3ff" stroke="#36c" stroke-width="5"/>
<path d="M15.5 67.5h104M67.5 15.5c-22 26-22 78 0 104M67.5 15.5c22 26 22 78 0 104" fill="none" stroke="#36c" stroke-width="4"/>
<text x="67.5" y="131" font-family="sans-serif" font-size="14" text-anchor="middle" fill="#202122">Meridian</text>
</svg>
"""


class WikiSite(Site):
    """MediaWiki 1.39 (Debian) on SQLite: the encyclopedia of the Meridian continent."""

    name: ClassVar[str] = "wiki"
    title: ClassVar[str] = "MediaWiki encyclopedia (Meridian Wiki)"
    app: ClassVar[str] = "MediaWiki 1.39 (Debian mediawiki package), SQLite, php -S"
    default_port: ClassVar[int] = 8473
    version: ClassVar[str] = "1"
    health_path: ClassVar[str] = "/wiki/Main_Page"
    users: ClassVar[dict[str, str]] = {}  # filled below from the seed data
    login_path = "/index.php?title=Special:UserLogin"
    login_fields = ("wpName", "wpPassword")

    # ------------------------------------------------------------------ locations
    @property
    def app_dir(self) -> Path:
        return self.home / "app"

    @property
    def db_dir(self) -> Path:
        return self.home / "db"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def settings_file(self) -> Path:
        return self.app_dir / "LocalSettings.php"

    def databases(self) -> list[Path]:
        return [self.db_dir / f"{DB_NAME}.sqlite", self.db_dir / f"{DB_NAME}_jobqueue.sqlite",
                self.db_dir / "wikicache.sqlite"]

    def is_set_up(self) -> bool:
        """Set up for this version *and* this seed data (a changed seed sets the site up again)."""
        if not super().is_set_up():
            return False
        from mag_dataset.sites.wiki.seed import world

        try:
            info = json.loads(self.setup_file.read_text())
        except (OSError, ValueError):
            return False
        return info.get("seeded", {}).get("fingerprint") == world().fingerprint()

    # ------------------------------------------------------------------ install
    def install(self, log: Callable[[str], None]) -> None:
        missing = self._missing_packages()
        if missing and os.geteuid() == 0 and shutil.which("apt-get"):
            log(f"wiki: apt-get install {' '.join(missing)}")
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            proc = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing],
                                  env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
                raise SiteError(f"site wiki: apt-get install {' '.join(missing)} failed ({tail[0][:160]}); "
                                f"run `sudo apt-get update && sudo apt-get install -y {' '.join(missing)}`")
            missing = self._missing_packages()
        if missing:
            raise SiteError(f"site wiki: missing Debian packages {', '.join(missing)}; run "
                            f"`sudo apt-get install -y {' '.join(missing)}`")
        log("wiki: MediaWiki and PHP packages present")

    @staticmethod
    def _missing_packages() -> list[str]:
        missing = []
        php = shutil.which("php")
        modules = ""
        if php:
            proc = subprocess.run([php, "-m"], capture_output=True, text=True)
            modules = proc.stdout.lower()
        for pkg, proof in PACKAGES.items():
            if proof.startswith("/"):
                ok = Path(proof).is_file()
            elif proof == "php":
                ok = php is not None
            else:
                ok = php is not None and proof.lower() in modules.split()
            if not ok:
                missing.append(pkg)
        return missing

    # ------------------------------------------------------------------ create and seed
    def _php_env(self) -> dict[str, str]:
        from mag_dataset.sites.wiki.seed import INSTALL_TIME

        return {**os.environ, "MW_CONFIG_FILE": str(self.settings_file), "MAG_FAKE_TIME": str(INSTALL_TIME),
                "MW_INSTALL_PATH": str(MW_DIR)}

    def _maintenance(self, script: str, *args: str, log: Callable[[str], None], stdin: str | None = None) -> str:
        start = time.monotonic()
        argv = ["php", "-d", f"auto_prepend_file={self.app_dir / 'prepend.php'}", "-d", "memory_limit=512M",
                str(MW_DIR / "maintenance" / script), *args]
        proc = subprocess.run(argv, env=self._php_env(), cwd=str(MW_DIR), capture_output=True, text=True,
                              input=stdin)
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
            raise SiteError(f"site wiki: maintenance/{script} failed ({(lines[-1] if lines else '')[:200]}); "
                            f"run `mag sites setup --site wiki --force`")
        log(f"wiki: {script} {' '.join(a for a in args if not a.startswith('--pass'))[:60]} "
            f"({time.monotonic() - start:.1f}s)")
        return proc.stdout

    def create_and_seed(self, log: Callable[[str], None]) -> dict[str, Any]:
        import hashlib

        from mag_dataset.sites.wiki import seed

        for d in (self.app_dir, self.db_dir, self.cache_dir):
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)
        (self.app_dir / "prepend.php").write_text(_PREPEND.format(mw=MW_DIR))
        (self.app_dir / "logo.svg").write_text(_LOGO)
        (self.app_dir / "router.php").write_text(_ROUTER.format(mw=MW_DIR, settings=self.settings_file,
                                                                logo=self.app_dir / "logo.svg"))
        admin = seed.USERS[0]
        # the installer writes its own LocalSettings.php into a scratch folder; ours replaces it
        scratch = self.home / "install-tmp"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        self._maintenance("install.php", "--dbtype=sqlite", f"--dbpath={self.db_dir}", f"--dbname={DB_NAME}",
                          f"--confpath={scratch}", f"--server={self.base_url}", "--scriptpath=",
                          "--lang=en", f"--pass={admin.password}", "--skins=Vector", seed.SITENAME,
                          admin.name, log=log)
        shutil.rmtree(scratch, ignore_errors=True)
        digest = hashlib.sha256(f"meridian-wiki:{seed.SEED}".encode()).hexdigest()
        ext = "\n".join(f"wfLoadExtension( '{e}' );" for e in EXTENSIONS)
        self.settings_file.write_text(_SETTINGS.format(
            sitename=seed.SITENAME, meta=seed.SITENAME.replace(" ", "_"), port=self.port, dbname=DB_NAME,
            db=self.db_dir, cache=self.cache_dir, secret=digest, upgrade=digest[:16], extensions=ext))
        for user in seed.USERS[1:]:
            args = [f"--custom-groups={g}" if g not in ("sysop", "bureaucrat") else f"--{g}" for g in user.groups]
            self._maintenance("createAndPromote.php", *args, user.name, user.password, log=log)
        dump = self.home / "seed-dump.xml"
        dump.write_text(seed.dump_xml())
        self._maintenance("importDump.php", "--no-updates", str(dump), log=log)
        dump.unlink()
        self._maintenance("rebuildrecentchanges.php", log=log)
        self._maintenance("refreshLinks.php", log=log)
        self._maintenance("rebuildtextindex.php", log=log)
        self._maintenance("initSiteStats.php", "--update", log=log)
        self._maintenance("runJobs.php", log=log)
        self._maintenance("rebuildLocalisationCache.php", "--lang=en", "--force", log=log)
        counts = seed.counts()
        got = self.query("SELECT COUNT(*) FROM page WHERE page_namespace = 0 AND page_is_redirect = 0")[0][0]
        revs = self.query("SELECT COUNT(*) FROM revision")[0][0]
        counts.update(db_content_pages=got, db_revisions=revs, fingerprint=seed.world().fingerprint())
        if got < counts["articles"]:
            raise SiteError(f"site wiki: only {got} articles after the import (expected {counts['articles']}); "
                            f"run `mag sites setup --site wiki --force`")
        return counts

    # ------------------------------------------------------------------ serve
    def server_command(self) -> ServerCommand:
        # opcache: PHP's CLI (and so `php -S`) compiles every MediaWiki file anew on each request
        # unless it is on; the compiled code is cached only, never what a page shows
        argv = ("php", "-d", "memory_limit=512M", "-d", "display_errors=stderr", "-d", "opcache.enable_cli=1",
                "-S", f"127.0.0.1:{self.port}", "-t", str(MW_DIR), str(self.app_dir / "router.php"))
        return ServerCommand(argv=argv, env={"PHP_CLI_SERVER_WORKERS": str(WORKERS),
                                             "MW_CONFIG_FILE": str(self.settings_file),
                                             "MAG_WIKI_SERVER": self.base_url},
                             cwd=str(MW_DIR))


    def apply_drift(self, rng: Any, level: int) -> dict[str, int]:
        """A few days of the other editors' work per level: :func:`.drift.apply_drift` (no cache to clear)."""
        from mag_dataset.sites.wiki.drift import apply_drift

        return apply_drift(self, rng, level)

    # ------------------------------------------------------------------ state helpers (tasks' checks)
    def page_row(self, title: str, ns: int = 0) -> tuple[int, int, int] | None:
        """``(page_id, page_latest, page_is_redirect)`` of a page, or None."""
        rows = self.query("SELECT page_id, page_latest, page_is_redirect FROM page WHERE page_namespace = ? "
                          "AND page_title = ?", (ns, db_key(title)))
        return rows[0] if rows else None

    def revision_text(self, rev_id: int) -> str:
        """Wikitext of the main slot of a revision."""
        rows = self.query(
            "SELECT t.old_text, t.old_flags FROM slots s JOIN content c ON c.content_id = s.slot_content_id "
            "JOIN text t ON 'tt:' || t.old_id = c.content_address WHERE s.slot_revision_id = ?", (rev_id,))
        if not rows:
            return ""
        text, flags = rows[0]
        if isinstance(text, bytes):
            if "gzip" in (flags or ""):
                import zlib

                text = zlib.decompress(text, -15)
            text = text.decode("utf-8")
        return str(text)

    def page_text(self, title: str, ns: int = 0) -> str | None:
        row = self.page_row(title, ns)
        return self.revision_text(row[1]) if row else None

    def revisions(self, title: str, ns: int = 0) -> list[tuple[int, str, str, str]]:
        """``(rev_id, user name, comment, timestamp)`` of a page, oldest first."""
        return [tuple(r) for r in self.query(
            "SELECT r.rev_id, a.actor_name, COALESCE(c.comment_text, ''), r.rev_timestamp FROM revision r "
            "JOIN page p ON p.page_id = r.rev_page JOIN actor a ON a.actor_id = r.rev_actor "
            "LEFT JOIN comment c ON c.comment_id = COALESCE(NULLIF(r.rev_comment_id, 0), (SELECT "
            "t.revcomment_comment_id FROM revision_comment_temp t WHERE t.revcomment_rev = r.rev_id)) "
            "WHERE p.page_namespace = ? AND p.page_title = ? ORDER BY r.rev_timestamp, r.rev_id",
            (ns, db_key(title)))]

    def categories_of(self, title: str, ns: int = 0) -> set[str]:
        return {str(r[0]).replace("_", " ") for r in self.query(
            "SELECT cl.cl_to FROM categorylinks cl JOIN page p ON p.page_id = cl.cl_from "
            "WHERE p.page_namespace = ? AND p.page_title = ?", (ns, db_key(title)))}


def db_key(title: str) -> str:
    """MediaWiki's database key of a title (spaces as underscores, first letter upper case)."""
    t = title.strip().replace(" ", "_")
    return t[:1].upper() + t[1:]


def _users() -> dict[str, str]:
    from mag_dataset.sites.wiki.seed import USERS

    return {u.name: u.password for u in USERS}


WikiSite.users = _users()
SITE = WikiSite

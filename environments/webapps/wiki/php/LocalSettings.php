<?php
# The wiki's MediaWiki settings, written by agentgym's WikiSite.install() from the package's copy
# (@NAME@ placeholders filled in). One MediaWiki serves every tenant: the request's Host
# (t<N>.wiki.localhost) picks tenant N's SQLite database file; maintenance scripts name the
# database folder in $AGENTGYM_WIKI_DB_DIR.
if ( !defined( 'MEDIAWIKI' ) ) {
	exit;
}
require_once "$IP/includes/PlatformSettings.php";

$agentgymHome = '@HOME@';
$agentgymHost = $_SERVER['HTTP_HOST'] ?? '';
if ( getenv( 'AGENTGYM_WIKI_DB_DIR' ) ) {
	$wgSQLiteDataDir = getenv( 'AGENTGYM_WIKI_DB_DIR' );
	$wgServer = 'http://localhost:@PORT@';
} elseif ( preg_match( '/^t(\d+)\.wiki\.localhost(:\d+)?$/', $agentgymHost, $agentgymMatch ) ) {
	$wgSQLiteDataDir = "$agentgymHome/tenants/t{$agentgymMatch[1]}";
	$wgServer = "http://$agentgymHost";
	if ( !is_file( "$wgSQLiteDataDir/wiki.sqlite" ) ) {
		http_response_code( 404 );
		header( 'Content-Type: text/plain' );
		echo "Tenant {$agentgymMatch[1]} of the wiki has not been set up (WikiSite.reset_tenant makes it).\n";
		exit;
	}
} else {
	http_response_code( 404 );
	header( 'Content-Type: text/plain' );
	echo "Unknown host '$agentgymHost': this wiki answers at http://t<N>.wiki.localhost:@PORT@/ (tenant N).\n";
	exit;
}

$wgSitename = '@SITENAME@';
$wgMetaNamespace = 'Project';
$wgScriptPath = '';
$wgArticlePath = '/wiki/$1';
$wgUsePathInfo = true;
$wgResourceBasePath = $wgScriptPath;
$wgLogos = [ '1x' => "$wgResourceBasePath/resources/assets/change-your-logo.svg" ];
$wgFavicon = false;

# One SQLite file per tenant; its name is the same for all (so cache keys, which carry the wiki
# id, are the same in the golden snapshot and in every tenant's copy of it).
$wgDBtype = 'sqlite';
$wgDBname = 'wiki';
$wgDBserver = '';
$wgDBuser = '';
$wgDBpassword = '';
$wgDBprefix = '';
# The tenant's data is disposable (reset restores it from the golden file): no fsync, and
# write transactions take their lock up front (no deadlocks between concurrent requests).
$wgDBservers = [ [
	'host' => '', 'dbname' => $wgDBname, 'user' => '', 'password' => '', 'type' => 'sqlite', 'load' => 1,
	'flags' => DBO_DEFAULT, 'dbDirectory' => $wgSQLiteDataDir, 'trxMode' => 'IMMEDIATE',
	'variables' => [ 'synchronous' => 'OFF' ],
] ];

# Caches: none outside the tenant's own database. Sessions live in the tenant's objectcache
# table (CACHE_DB); parsed pages, messages and the main cache are not cached at all; the
# localisation cache is read-only language data, shared as files.
$wgMainCacheType = CACHE_NONE;
$wgParserCacheType = CACHE_NONE;
$wgMessageCacheType = CACHE_NONE;
$wgSessionCacheType = CACHE_DB;
$wgCacheDirectory = "$agentgymHome/cache";
$wgLocalisationCacheConf['store'] = 'files';
$wgLocalisationCacheConf['storeDirectory'] = "$agentgymHome/cache/l10n";
$wgLocalisationCacheConf['manualRecache'] = true;
$wgUseFileCache = false;
$wgEnableSidebarCache = false;
$wgResourceLoaderUseObjectCacheForDeps = false;
# Jobs queue in the tenant's database; none run on page views (edits update links themselves).
$wgJobRunRate = 0;

$wgSecretKey = '@SECRET@';
$wgUpgradeKey = '@UPGRADE@';
$wgCookiePrefix = 'wiki';
$wgCookieSecure = false;

$wgEnableEmail = false;
$wgEnableUserEmail = false;
$wgEnableUploads = false;
$wgUseInstantCommons = false;
$wgPingback = false;
$wgLanguageCode = 'en';
$wgLocaltimezone = 'UTC';
$wgDiff3 = '/usr/bin/diff3';
$wgRightsText = '';
$wgRateLimits = [];
$wgGroupPermissions['*']['createaccount'] = false;
$wgRCMaxAge = 10 * 365 * 24 * 3600;

$wgDefaultSkin = 'vector';
wfLoadSkin( 'Vector' );
$wgVectorDefaultSkinVersion = '1';

$wgShowExceptionDetails = true;
$wgDebugLogGroups['exception'] = "$agentgymHome/run/exception.log";
$wgDebugLogGroups['error'] = "$agentgymHome/run/exception.log";

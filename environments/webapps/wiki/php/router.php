<?php
// The PHP built-in server's router for the wiki: /wiki/<Title> is an article (MediaWiki's
// $wgArticlePath); everything else is a file under MediaWiki's folder (index.php, load.php, ...).
$agentgymPath = parse_url( $_SERVER['REQUEST_URI'], PHP_URL_PATH );
if ( $agentgymPath === '/wiki' || str_starts_with( $agentgymPath, '/wiki/' ) ) {
	$_SERVER['SCRIPT_NAME'] = '/index.php';
	$_SERVER['SCRIPT_FILENAME'] = $_SERVER['DOCUMENT_ROOT'] . '/index.php';
	$_SERVER['PHP_SELF'] = '/index.php';
	chdir( $_SERVER['DOCUMENT_ROOT'] );
	require $_SERVER['DOCUMENT_ROOT'] . '/index.php';
	return true;
}
return false;

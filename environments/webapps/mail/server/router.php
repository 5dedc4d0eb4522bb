<?php
// Router of PHP's built-in web server for agentgym's mail site: static assets of Roundcube
// (skins, plugins, program/js) are served as files; every other request runs index.php.
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if ($path === '/favicon.ico') {
    $path = '/skins/elastic/images/favicon.ico';
    header('Content-Type: image/x-icon');
    readfile(__DIR__ . $path);
    return true;
}
if (preg_match('#^/(skins|plugins|program/js|program/resources)/[^\0]+\.(js|css|png|gif|jpg|svg|ico|woff2?|ttf|eot|map|html|txt)$#', $path)
    && strpos($path, '..') === false && is_file(__DIR__ . $path)) {
    return false;
}
define('INSTALL_PATH', __DIR__ . '/');
chdir(__DIR__);
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['SCRIPT_FILENAME'] = __DIR__ . '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';
require __DIR__ . '/index.php';

<?php
// Roundcube's configuration for agentgym's mail site (rendered by MailSite.install()).
// The request's Host names the tenant: t<N>.@@SITE@@.localhost uses tenant N's own Roundcube
// database and (through the agentgym_tenant plugin) the IMAP/SMTP accounts "<user>@t<N>".
$config = [];

$agentgym_host = strtolower(preg_replace('/:\d+$/', '', $_SERVER['HTTP_HOST'] ?? ''));
if (!preg_match('/^(t\d+|golden)\.@@SITE@@\.localhost$/', $agentgym_host, $agentgym_match)) {
    http_response_code(404);
    exit("This mail site answers at http://t<N>.@@SITE@@.localhost:@@PORT@@/ (tenant N), not at " . htmlspecialchars($agentgym_host));
}
$config['agentgym_tenant'] = $agentgym_match[1];
$config['db_dsnw'] = 'sqlite:///@@TENANTS@@/' . $agentgym_match[1] . '/roundcube.db?mode=0660';

$config['imap_host'] = '127.0.0.1:@@IMAP_PORT@@';
$config['smtp_host'] = '127.0.0.1:@@SMTP_PORT@@';
$config['smtp_user'] = '%u';
$config['smtp_pass'] = '%p';
$config['managesieve_host'] = '127.0.0.1:@@SIEVE_PORT@@';
$config['managesieve_auth_type'] = 'PLAIN';
$config['managesieve_vacation'] = 0;
$config['mail_domain'] = '@@DOMAIN@@';
$config['des_key'] = 'agentgym-mail-local-key!';
$config['product_name'] = '@@PRODUCT@@';
$config['support_url'] = '';
$config['skin'] = 'elastic';
$config['plugins'] = ['agentgym_tenant', 'managesieve'];
$config['enable_installer'] = false;
$config['enable_spellcheck'] = false;
$config['log_dir'] = '@@RUN@@/roundcube-logs/';
$config['temp_dir'] = '@@RUN@@/roundcube-temp/';
// Seeded sessions live as long as the snapshot (minutes: ten years).
$config['session_lifetime'] = 5256000;
$config['ip_check'] = false;
// Deterministic pages: UTC, absolute dates, no autosaved drafts, no background refresh.
$config['timezone'] = 'UTC';
$config['prettydate'] = false;
$config['date_long'] = 'Y-m-d H:i';
$config['date_short'] = 'Y-m-d H:i';
$config['draft_autosave'] = 0;
$config['refresh_interval'] = 0;
$config['mail_pagesize'] = 50;
$config['mime_types'] = '/etc/roundcube/mimetypes.php';

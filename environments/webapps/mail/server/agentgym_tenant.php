<?php
/**
 * agentgym_tenant: logs in to IMAP, SMTP and ManageSieve as "<user>@<tenant>", the tenant
 * being named by the request's host (config 'agentgym_tenant', set in config.inc.php), so one
 * Roundcube serves every tenant's own accounts while its users and sessions stay tenant-free.
 *
 * Two changes for agents, who read the page as text once an action's page load is over: a
 * clicked message opens as a page of its own instead of in the preview frame (the page text
 * covers the main frame only), and Roundcube's requests to its server are synchronous, so that
 * an action (search, flag, move) is complete when the click or key press returns.
 */
class agentgym_tenant extends rcube_plugin
{
    public function init()
    {
        $this->add_hook('storage_connect', [$this, 'storage_connect']);
        $this->add_hook('smtp_connect', [$this, 'smtp_connect']);
        $this->add_hook('managesieve_connect', [$this, 'managesieve_connect']);
        $this->add_hook('render_page', [$this, 'render_page']);
        $output = rcmail::get_instance()->output;
        if ($output instanceof rcmail_output_html) {
            // Inline head scripts run after jQuery and app.js are loaded, before rcmail.init().
            $output->add_script('jQuery.ajaxSetup({async: false});', 'head');
        }
    }

    private function tenant_user($user)
    {
        $tenant = rcube::get_instance()->config->get('agentgym_tenant');
        $name = preg_replace('/@.*$/', '', (string) $user);
        return $tenant ? "$name@$tenant" : $name;
    }

    public function storage_connect($args)
    {
        $args['user'] = $this->tenant_user($args['user']);
        return $args;
    }

    public function managesieve_connect($args)
    {
        $args['user'] = $this->tenant_user($args['user']);
        return $args;
    }

    public function smtp_connect($args)
    {
        $args['smtp_user'] = $this->tenant_user(rcube::get_instance()->get_user_name());
        return $args;
    }

    public function render_page($args)
    {
        $rcmail = rcmail::get_instance();
        if ($rcmail->task == 'mail' && ($rcmail->action == '' || $rcmail->action == 'index')) {
            $rcmail->output->add_script(
                "if (rcmail.message_list) { rcmail.env.contentframe = null;"
                . " rcmail.message_list.addEventListener('select', function(list) {"
                . " var uid = list.get_single_selection();"
                . " if (uid && !list.multi_selecting && !list.shiftkey && !list.ctrlkey) rcmail.show_message(uid); }); }",
                'docready'
            );
        }
        return $args;
    }
}

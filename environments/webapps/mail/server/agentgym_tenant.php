<?php
/**
 * agentgym_tenant: logs in to IMAP, SMTP and ManageSieve as "<user>@<tenant>", the tenant
 * being named by the request's host (config 'agentgym_tenant', set in config.inc.php), so one
 * Roundcube serves every tenant's own accounts while its users and sessions stay tenant-free.
 *
 * It also opens a clicked message as a page of its own instead of in the preview frame, so
 * that the message is on the page an agent reads (agentgym's page text covers the main frame).
 */
class agentgym_tenant extends rcube_plugin
{
    public function init()
    {
        $this->add_hook('storage_connect', [$this, 'storage_connect']);
        $this->add_hook('smtp_connect', [$this, 'smtp_connect']);
        $this->add_hook('managesieve_connect', [$this, 'managesieve_connect']);
        $this->add_hook('render_page', [$this, 'render_page']);
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

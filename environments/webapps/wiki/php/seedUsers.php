<?php
/**
 * Registers the wiki's editors in one run (what createAndPromote.php does for one user):
 * php seedUsers.php USERS.json, where the file lists {"name": ..., "password": ...} objects.
 * Run by agentgym's WikiSite.build_golden with MW_INSTALL_PATH set.
 */

use MediaWiki\Auth\AuthManager;
use MediaWiki\MediaWikiServices;

require_once getenv( 'MW_INSTALL_PATH' ) . '/maintenance/Maintenance.php';

class AgentgymSeedUsers extends Maintenance {
	public function __construct() {
		parent::__construct();
		$this->addDescription( 'Create the accounts listed in a JSON file, with their passwords' );
		$this->addArg( 'file', 'JSON list of {"name", "password"} objects' );
	}

	public function execute() {
		$users = json_decode( file_get_contents( $this->getArg( 0 ) ), true );
		if ( !is_array( $users ) ) {
			$this->fatalError( 'the file does not hold a JSON list of users' );
		}
		$services = MediaWikiServices::getInstance();
		foreach ( $users as $entry ) {
			$user = $services->getUserFactory()->newFromName( $entry['name'] );
			if ( !is_object( $user ) ) {
				$this->fatalError( "invalid user name {$entry['name']}" );
			}
			if ( $user->idForName() !== 0 ) {
				continue;
			}
			$status = $services->getAuthManager()->autoCreateUser(
				$user, AuthManager::AUTOCREATE_SOURCE_MAINT, false
			);
			if ( !$status->isGood() ) {
				$this->fatalError( $status->getMessage( false, false, 'en' )->text() );
			}
			$status = $user->changeAuthenticationData( [
				'username' => $user->getName(), 'password' => $entry['password'], 'retype' => $entry['password'],
			] );
			if ( !$status->isGood() ) {
				$this->fatalError( $status->getMessage( false, false, 'en' )->text() );
			}
			SiteStatsUpdate::factory( [ 'users' => 1 ] )->doUpdate();
			$this->output( "{$entry['name']}\n" );
		}
	}
}

$maintClass = AgentgymSeedUsers::class;
require_once RUN_MAINTENANCE_IF_MAIN;

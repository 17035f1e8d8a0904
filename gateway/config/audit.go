package config

// Audit is [audit]: where the gateway's ledger lives and how often it is
// sealed with a signed checkpoint.
//
//	[audit]
//	dir = "/var/lib/bastion/audit"     # default $XDG_DATA_HOME/bastion/audit
//	key_file = "/etc/bastion/audit.key" # default <dir>/checkpoint.key
//	checkpoint_every = 1000            # records between checkpoints
//	checkpoint_interval = "30s"        # time between checkpoints
type Audit struct {
	Dir                string   `toml:"dir"`
	KeyFile            string   `toml:"key_file"`
	CheckpointEvery    int      `toml:"checkpoint_every"`
	CheckpointInterval Duration `toml:"checkpoint_interval"`
	// MaxFileMB rotates a segment past this size; zero means the ledger's
	// default.
	MaxFileMB int `toml:"max_file_mb"`
}

// Approvals is [approvals]: where parked calls wait for a human.
//
//	[approvals]
//	file = "/var/lib/bastion/approvals.json"  # default beside the audit dir
type Approvals struct {
	File string `toml:"file"`
}

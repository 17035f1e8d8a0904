package config

// Pins is [pins]: where the approved tool hashes of the pin gate ([pin])
// are kept, so they survive a restart and `bastion pin approve` can change
// them from another process.
//
//	[pins]
//	file = "/var/lib/bastion/pins.json"  # default beside the audit dir
type Pins struct {
	File string `toml:"file"`
}

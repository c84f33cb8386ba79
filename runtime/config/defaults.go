// Defaults: each section's are its owning package's (SetDefaults there);
// what is left here are the fields that depend on other sections.

package config

// SetDefaults fills every unset field with its default: each section's
// owning package fills its own (floor, companion, repetition, realtime,
// query, brain, bus, broker); a robot's hearing section and its body's
// are device/robot's.
func (c *Config) SetDefaults() {
	c.Room.VoteSettings.SetDefaults()
	c.Room.TurnSettings.SetDefaults()
	c.Room.Repetition.SetDefaults()
	if c.Room.Mode == "" {
		c.Room.Mode = ModeTurn
	}
	if c.Room.FloorInstance == "" {
		c.Room.FloorInstance = c.Device.ID
	}
	c.MQTT.Settings.SetDefaults()
	c.MQTT.Embedded.SetDefaults()
	if c.MQTT.Broker == "" && c.MQTT.Embedded.Enabled {
		c.MQTT.Broker = "tcp://" + c.MQTT.Embedded.Listen
	}
	if c.MQTT.Username == "" {
		c.MQTT.Username = c.Identity()
	}
	c.Brain.SetDefaults()
	c.Query.SetDefaults()
	if c.Memory != nil {
		c.Memory.SetDefaults()
	}
}

// resolvePaths makes the config's own relative paths relative to its
// file's folder, once the file is known (defaults are set before).
func (c *Config) resolvePaths() {
	if c.Memory != nil {
		c.Memory.Dir = c.Resolve(c.Memory.Dir)
	}
}

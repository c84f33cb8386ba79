// Package systemd embeds the unit files and their companions, so that
// `chorus install` can lay them into a root filesystem; and the
// recommended Mosquitto settings for a room on a LAN broker.
package systemd

import _ "embed"

// Service is chorusd.service.
//
//go:embed chorusd.service
var Service []byte

// Env is the commented defaults/environment file (/etc/default/chorusd).
//
//go:embed chorusd.env
var Env []byte

// Sysusers is the sysusers.d entry for the chorus user.
//
//go:embed chorus.sysusers
var Sysusers []byte

// MosquittoConf is the recommended Mosquitto configuration fragment for a
// room (/etc/mosquitto/conf.d/chorus.conf).
//
//go:embed mosquitto-chorus.conf
var MosquittoConf []byte

// NATSConf is one node of the three-node NATS cluster that serves rooms
// over MQTT when one broker is not enough (/etc/nats/chorus.conf).
//
//go:embed nats-chorus.conf
var NATSConf []byte

// NATSService is the systemd unit example for a NATS node.
//
//go:embed nats-chorus.service
var NATSService []byte

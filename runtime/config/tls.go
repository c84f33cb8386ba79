package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/chorus-robotics/chorus/runtime/bus"
)

// readCA is the pool of the CA file at path (relative to the config).
func (c *Config) readCA(field, path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(c.Resolve(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", field, path)
	}
	return pool, nil
}

// ClientTLS is the TLS configuration of the device's MQTT connections: nil
// for a tcp:// broker; for ssl://, the CA to verify the broker (the system
// roots when none is given) and the device's client certificate, if any.
func (c *Config) ClientTLS() (*tls.Config, error) {
	t := c.MQTT.TLS
	if t == (bus.TLSFiles{}) && !c.brokerIsTLS() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pool, err := c.readCA("mqtt.tls.ca_file", t.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(c.Resolve(t.Cert), c.Resolve(t.Key))
		if err != nil {
			return nil, fmt.Errorf("mqtt.tls.cert_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (c *Config) brokerIsTLS() bool {
	return len(c.MQTT.Broker) > 6 && c.MQTT.Broker[:6] == "ssl://"
}

// ServerTLS is the embedded broker's TLS configuration: nil without a
// certificate; with client_ca, every client must present a certificate
// that CA signed.
func (c *Config) ServerTLS() (*tls.Config, error) {
	e := c.MQTT.Embedded
	if e.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.Resolve(e.TLSCert), c.Resolve(e.TLSKey))
	if err != nil {
		return nil, fmt.Errorf("mqtt.embedded.tls_cert: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if e.TLSClientCA != "" {
		pool, err := c.readCA("mqtt.embedded.tls_client_ca", e.TLSClientCA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

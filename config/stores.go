package config

// checkStores validates the combinations of the TLS trust and key settings:
// Kafka's Java names (ssl.truststore.*, ssl.keystore.*) and the PEM file
// names (ssl.ca.location, ssl.certificate.location, ssl.key.location) are
// two ways to say the same thing, and only one may be used for each.
func (c *Config) checkStores(fail func(key, format string, args ...any)) {
	s := c.Security
	switch {
	case s.SSLTruststoreLocation != "" && s.SSLTruststoreCertificates != "":
		fail("ssl.truststore.certificates", "ssl.truststore.location and ssl.truststore.certificates are both set: set one")
	case s.SSLCALocation != "" && (s.SSLTruststoreLocation != "" || s.SSLTruststoreCertificates != ""):
		fail("ssl.ca.location", "ssl.ca.location and ssl.truststore.* both name the trusted authorities: set one")
	case s.SSLTruststoreCertificates != "" && s.SSLTruststoreType != StorePEM:
		fail("ssl.truststore.certificates", "ssl.truststore.certificates requires ssl.truststore.type=PEM")
	}
	inlineKey := s.SSLKeystoreKey != "" || s.SSLKeystoreCertificateChain != ""
	switch {
	case s.SSLKeystoreLocation != "" && inlineKey:
		fail("ssl.keystore.location", "ssl.keystore.location and ssl.keystore.key/ssl.keystore.certificate.chain are both set: set one")
	case (s.SSLCertificateLocation != "" || s.SSLKeyLocation != "") && (s.SSLKeystoreLocation != "" || inlineKey):
		fail("ssl.keystore.location", "ssl.certificate.location/ssl.key.location and ssl.keystore.* both name the client certificate: set one")
	case inlineKey && (s.SSLKeystoreKey == "" || s.SSLKeystoreCertificateChain == ""):
		fail("ssl.keystore.key", "ssl.keystore.key and ssl.keystore.certificate.chain go together: set both or neither")
	case inlineKey && s.SSLKeystoreType != StorePEM:
		fail("ssl.keystore.key", "ssl.keystore.key requires ssl.keystore.type=PEM")
	}
}

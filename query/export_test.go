package query

// NewTestCA makes a certificate authority for the external tests.
var NewTestCA = newTestCA

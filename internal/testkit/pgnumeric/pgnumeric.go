// Package pgnumeric holds test data about PostgreSQL's numeric type. Only
// tests import it: the service's unit test checks its model of the limits
// with it, and the store test checks the same cases against the server.
package pgnumeric

// LimitCases are JSON number literals at the edges of PostgreSQL's numeric
// range, with whether a plan payload may hold them.
func LimitCases() map[string]bool {
	return map[string]bool{
		"1e1000": true, "1e131071": true, "1e131072": false,
		"1e-16383": true, "1e-16384": false,
		"0e200000": true, "0.0e-20000": false,
		"12345e131067": true, "12345e131068": false,
		"0.00123e131074": true, "0.00123e131075": false,
		"-3.25": true, "1e99999999999": false,
	}
}

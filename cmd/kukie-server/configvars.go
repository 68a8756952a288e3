package main

import (
	"fmt"
	"strconv"
	"strings"
)

// envOr reads the variable name, or def when it is unset.
func envOr(getenv func(string) string, name, def string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return def
}

// envBool reads the variable name as true or false (unset: false).
func envBool(getenv func(string) string, name string) (bool, error) {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, &configError{name, "must be true or false"}
	}
	return v, nil
}

// byteSize reads the variable name as a whole number of bytes of at least
// least, or def when it is unset.
func byteSize(getenv func(string) string, name string, def, least int64) (int64, error) {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < least {
		return def, &configError{name, fmt.Sprintf("must be a whole number of bytes, at least %d", least)}
	}
	return n, nil
}

//go:build !linux

package realserver

// favour changes nothing outside Linux (see priority_linux.go).
func favour(int) {}

// Package child ties the processes an example starts (workers, a
// redis-server) to the example's own life.
package child

package redislimit

import (
	"slices"
	"time"

	"github.com/pacehttp/pace"
)

// The units that Waits sleep for on a key's share (see take), and how
// they are woken: a pause, or a grown sliding log's share, gives every
// one back, the latest first, and wakes the Waits to book again.

// booking is a unit that a Wait sleeps for: r on the share, pr on its
// pacer (when pacer is set), delay from when it was booked.
type booking struct {
	r, pr         pace.Reservation
	shaper, pacer *pace.Shaper
	delay         time.Duration
	gone          bool // given back by a pause or a grown sliding log's share (see cancelBooked); k.book guards it
}

// cancel gives b's units back at now.
func (b *booking) cancel(now time.Time) {
	b.shaper.CancelAt(now, b.r)
	if b.pacer != nil {
		b.pacer.CancelAt(now, b.pr)
	}
}

// unbook ends the wait of b at now and reports whether its unit is gone:
// with all (the key was paused, or its share grew, while b waited), every
// unit a Wait sleeps for goes back, the latest first, so that each comes
// back whole (a token bucket gives back only what no later booking
// overlaps).
func (k *leaseKey) unbook(b *booking, now time.Time, all bool) (gone bool) {
	k.book.Lock()
	defer k.book.Unlock()
	if b.gone {
		return true // given back with the others already
	}
	if all {
		k.cancelBooked(now)
		return true
	}
	if i := slices.Index(k.booked, b); i >= 0 {
		k.booked = slices.Delete(k.booked, i, i+1)
	}
	return false
}

// cancelBooked gives back at now every unit that Waits sleep for, the
// latest first, and marks each gone; k.book is held.
func (k *leaseKey) cancelBooked(now time.Time) {
	for i := len(k.booked) - 1; i >= 0; i-- {
		k.booked[i].cancel(now)
		k.booked[i].gone = true
	}
	clear(k.booked)
	k.booked = k.booked[:0]
}

// rebook gives back at now every unit that Waits sleep for, then wakes
// them to book again: on a sliding log's share grown since they booked,
// their units come sooner (a sliding log books nothing before its latest
// entry, so each goes back). A Wait that booked meanwhile finds its unit gone
// before it sleeps, or is woken.
func (k *leaseKey) rebook(now time.Time) {
	k.book.Lock()
	k.cancelBooked(now)
	k.book.Unlock()
	k.mu.Lock()
	k.wakeLocked()
	k.mu.Unlock()
}

// gone reports whether b's unit was given back (see cancelBooked).
func (k *leaseKey) gone(b *booking) bool {
	k.book.Lock()
	defer k.book.Unlock()
	return b.gone
}

// wakeLocked wakes the Waits sleeping for a unit of the key's share:
// each gives its unit back and looks at the share again (see take), for
// a pause or a share grown since it booked; k.mu is held.
func (k *leaseKey) wakeLocked() {
	if k.pausing != nil {
		close(k.pausing)
		k.pausing = nil
	}
}

// wakes returns the channel closed when the key is next paused or its
// share next grows (wakeLocked).
func (k *leaseKey) wakes() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pausing == nil {
		k.pausing = make(chan struct{})
	}
	return k.pausing
}

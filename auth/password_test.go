package auth

import (
	"sync"
	"testing"
)

// TestPasswordHash_BoundedDerivations checks that a storm of password
// checks runs at most cap(argonSlots) Argon2id derivations at once, each
// of which holds 19 MiB, and that every check still gets its answer.
func TestPasswordHash_BoundedDerivations(t *testing.T) {
	h, err := newPasswordHash("right", defaultArgon)
	if err != nil {
		t.Fatal(err)
	}
	argonPeak.Store(0)
	var wg sync.WaitGroup
	results := make([]bool, 4*cap(argonSlots)+3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := "wrong"
			if i%2 == 0 {
				pw = "right"
			}
			results[i] = h.matches(pw)
		}()
	}
	wg.Wait()
	for i, ok := range results {
		if ok != (i%2 == 0) {
			t.Errorf("check %d: matches = %v", i, ok)
		}
	}
	if peak := argonPeak.Load(); peak > int64(cap(argonSlots)) || peak < 1 {
		t.Errorf("%d derivations ran at once, want 1..%d", peak, cap(argonSlots))
	}
}

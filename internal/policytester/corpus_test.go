package policytester_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policytester"
)

// TestGuardCorpus runs the guard corpus (testdata/guard) against config/samples: no dangerous call
// may be allowed and no benign call denied.
func TestGuardCorpus(t *testing.T) {
	rep, err := policytester.Run(context.Background(), "../../testdata/guard")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Errors {
		t.Errorf("%s %s: %s", e.File, e.Test, e.Error)
	}
	var dangerous, benign, allowedDangerous, deniedBenign int
	for _, r := range rep.Results {
		switch {
		case strings.HasPrefix(r.Case, "dangerous: "):
			dangerous++
			if !r.Pass && r.Got != nil && r.Got.Decision != "deny" {
				allowedDangerous++
			}
		case strings.HasPrefix(r.Case, "benign: "):
			benign++
			if !r.Pass && r.Got != nil && r.Got.Decision == "deny" {
				deniedBenign++
			}
		default:
			t.Errorf("%s: case %q is named neither \"dangerous: …\" nor \"benign: …\"", r.File, r.Case)
		}
		if !r.Pass {
			got := "no decision"
			if r.Got != nil {
				got = r.Got.Decision + " " + r.Got.Code + " " + r.Got.Message
			}
			t.Errorf("%s / %s: %s (got %s)", r.Test, r.Case, strings.Join(r.Failures, "; "), got)
		}
	}
	t.Logf("%d cases: %d dangerous (%d allowed), %d benign (%d denied)", dangerous+benign, dangerous, allowedDangerous, benign, deniedBenign)
	if dangerous < 120 || benign < 80 {
		t.Errorf("the corpus holds %d dangerous and %d benign cases; want at least 120 and 80", dangerous, benign)
	}
}

package shell

import "testing"

// TestFastParseCountsExact checks that the fast parser's node counts are
// exact: each slab of a first parse is sized by its count and must be
// filled to capacity. grow relies on it to clear only what a parse did not
// overwrite.
func TestFastParseCountsExact(t *testing.T) {
	srcs := append(fuzzSeeds(), "a 'b' \"c\" d'e'\"f\" 2>x 3>>y <z >&2 2>&1 | g && h || i; j;", "a;b|c&&d||e",
		"x \"\" '' \"a b\" 'c' d 1>&2 | y")
	accepted := 0
	for _, src := range srcs {
		if checkSlabsExact(t, src) {
			accepted++
		}
	}
	if accepted < 20 {
		t.Fatalf("the fast parser accepted only %d inputs", accepted)
	}
}

// checkSlabsExact parses src with a new fast parser and reports whether it
// was accepted; if so, each slab must be filled to the capacity its count
// gave it.
func checkSlabsExact(t *testing.T, src string) bool {
	t.Helper()
	var fp fastParser
	if _, ok := fp.parse(src, true); !ok {
		return false
	}
	sl := &fp.slabs
	for name, lc := range map[string][2]int{
		"lits": {len(sl.lits), cap(sl.lits)}, "sgls": {len(sl.sgls), cap(sl.sgls)},
		"dbls": {len(sl.dbls), cap(sl.dbls)}, "parts": {len(sl.parts), cap(sl.parts)},
		"dparts": {len(sl.dparts), cap(sl.dparts)}, "words": {len(sl.words), cap(sl.words)},
		"lwords": {len(sl.lwords), cap(sl.lwords)}, "wptrs": {len(sl.wptrs), cap(sl.wptrs)},
		"calls": {len(sl.calls), cap(sl.calls)}, "stmts": {len(sl.stmts), cap(sl.stmts)},
		"bins": {len(sl.bins), cap(sl.bins)}, "redirs": {len(sl.redirs), cap(sl.redirs)},
		"rptrs": {len(sl.rptrs), cap(sl.rptrs)}, "sptrs": {len(sl.sptrs), cap(sl.sptrs)},
	} {
		if lc[0] != lc[1] {
			t.Errorf("%q: %s slab holds %d of %d counted", src, name, lc[0], lc[1])
		}
	}
	return true
}

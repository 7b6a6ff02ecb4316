package shell

import "strings"

// optSpec describes a program's command-line options well enough to find
// where its operands (for wrappers: the wrapped command) start.
type optSpec struct {
	shortVal  string   // short options taking a value (attached or next word)
	shortNone string   // short options without a value
	shortOpt  string   // short options taking an optional attached value
	longVal   []string // long options taking a value (=v or next word)
	longNone  []string // long options without a value
	longOpt   []string // long options taking an optional =value
	dashIsOpt bool     // "-" alone is an option (env, su)
	numeric   bool     // -N is an option (nice -10)
	permute   bool     // options may follow operands (GNU getopt without '+')
	multiVal  bool     // unknown options may take up to three values (bwrap)
}

type optEvent struct {
	name   string // short letter or long name (canonical)
	val    Word
	hasVal bool
}

type optScan struct {
	events   []optEvent
	operands []int // permute mode: indexes of every operand
	start    int   // index of the first operand (len(args) if none)
	alts     []int // other possible starts, if unknown options took values
	dashdash bool  // "--" ended the options
}

type optKind uint8

const (
	optUnknown optKind = iota
	optNone
	optVal
	optOptional
)

func (s *optSpec) longKind(name string) (string, optKind) {
	for _, l := range s.longVal {
		if l == name {
			return l, optVal
		}
	}
	for _, l := range s.longNone {
		if l == name {
			return l, optNone
		}
	}
	for _, l := range s.longOpt {
		if l == name {
			return l, optOptional
		}
	}
	// getopt_long accepts unambiguous prefixes.
	found, kind, n := "", optUnknown, 0
	if name == "" {
		return name, optUnknown
	}
	for _, set := range [3]struct {
		l []string
		k optKind
	}{{s.longVal, optVal}, {s.longNone, optNone}, {s.longOpt, optOptional}} {
		for _, l := range set.l {
			if strings.HasPrefix(l, name) {
				found, kind = l, set.k
				n++
			}
		}
	}
	if n == 1 {
		return found, kind
	}
	return name, optUnknown
}

// scanInto parses options at the start of args into r. Unknown options are
// taken to have no value, and the positions where the operands would start if
// they had one are recorded in r.alts.
func (s *optSpec) scanInto(args []Word, r *optScan) {
	start, alts := s.scanFrom(args, 0, r)
	r.start = start
	if len(alts) == 0 {
		return
	}
	// Follow the alternatives (each position once).
	seen := []int{start}
	work := alts
	for len(work) > 0 && len(seen) < 64 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		if p > len(args) || containsInt(seen, p) || containsInt(r.alts, p) {
			continue
		}
		st, more := s.scanFrom(args, p, nil)
		if !containsInt(seen, st) {
			seen = append(seen, st)
			r.alts = append(r.alts, st)
		}
		for _, m := range more {
			if !containsInt(seen, m) {
				work = append(work, m)
			}
		}
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (s *optSpec) scanFrom(args []Word, i int, r *optScan) (int, []int) {
	var alts []int
	for i < len(args) {
		w := args[i]
		if w.Dynamic {
			break
		}
		v := w.Value
		if v == "--" {
			return s.scanDashDash(args, i, r), alts
		}
		if v == "-" && s.dashIsOpt {
			r.emit(optEvent{name: "-"})
			i++
			continue
		}
		if len(v) < 2 || v[0] != '-' {
			if s.permute {
				if r != nil {
					r.operands = append(r.operands, i)
				}
				i++
				continue
			}
			break
		}
		switch {
		case s.numeric && isDigits(v[1:]):
			r.emit(optEvent{name: v[1:]})
			i++
		case v[1] == '-':
			i, alts = s.scanLong(args, i, r, alts)
		default:
			i, alts = s.scanCluster(args, i, r, alts)
		}
	}
	return i, alts
}

// emit records an event; r may be nil.
func (r *optScan) emit(e optEvent) {
	if r != nil {
		r.events = append(r.events, e)
	}
}

// scanDashDash handles "--" at args[i]: options end. It returns the index
// after the options.
func (s *optSpec) scanDashDash(args []Word, i int, r *optScan) int {
	if r != nil {
		r.dashdash = true
	}
	i++
	if s.permute && r != nil {
		for j := i; j < len(args); j++ {
			r.operands = append(r.operands, j)
		}
		i = len(args)
	}
	return i
}

// scanLong handles the long option at args[i]; it returns the index after
// it.
func (s *optSpec) scanLong(args []Word, i int, r *optScan, alts []int) (int, []int) {
	name, val, hasEq := strings.Cut(args[i].Value[2:], "=")
	canon, kind := s.longKind(name)
	e := optEvent{name: canon}
	if hasEq {
		e.val, e.hasVal = litWord(val), true
	}
	switch kind {
	case optVal:
		if !hasEq && i+1 < len(args) {
			e.val, e.hasVal = args[i+1], true
			i++
		}
	case optUnknown:
		if !hasEq {
			alts = appendAlts(alts, i, s.multiVal)
		}
	}
	r.emit(e)
	return i + 1, alts
}

// scanCluster handles the cluster of short options at args[i]; it returns
// the index after the cluster and any separate value it takes.
func (s *optSpec) scanCluster(args []Word, i int, r *optScan, alts []int) (int, []int) {
	v := args[i].Value
	next := i + 1
	for j := 1; j < len(v); j++ {
		ch := v[j]
		name := v[j : j+1]
		switch {
		case strings.IndexByte(s.shortVal, ch) >= 0:
			e := optEvent{name: name, hasVal: true}
			if j+1 < len(v) {
				e.val = litWord(v[j+1:])
			} else if i+1 < len(args) {
				e.val = args[i+1]
				next = i + 2
			} else {
				e.hasVal = false
			}
			r.emit(e)
			return next, alts
		case strings.IndexByte(s.shortOpt, ch) >= 0:
			e := optEvent{name: name}
			if j+1 < len(v) {
				e.val, e.hasVal = litWord(v[j+1:]), true
			}
			r.emit(e)
			return next, alts
		case strings.IndexByte(s.shortNone, ch) >= 0:
			r.emit(optEvent{name: name})
		default:
			r.emit(optEvent{name: name})
			if j == len(v)-1 {
				alts = appendAlts(alts, i, s.multiVal)
			}
		}
	}
	return next, alts
}

func appendAlts(alts []int, i int, multi bool) []int {
	alts = append(alts, i+2)
	if multi {
		alts = append(alts, i+3, i+4)
	}
	return alts
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (r *optScan) has(names ...string) bool {
	for _, e := range r.events {
		for _, n := range names {
			if e.name == n {
				return true
			}
		}
	}
	return false
}

func (r *optScan) val(names ...string) (Word, bool) {
	for _, e := range r.events {
		for _, n := range names {
			if e.name == n && e.hasVal {
				return e.val, true
			}
		}
	}
	return Word{}, false
}

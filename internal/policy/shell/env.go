package shell

// varVal is what the analysis knows about one variable.
type varVal struct {
	s      string
	known  bool
	sticky bool // an attribute (-l, -u, -i, -n, ...) makes every value unknown
}

// env is the analysis' view of the shell variables: simple constant
// propagation. A variable not in vars has its default: HOME is "~", IFS is
// space-tab-newline, any other is unknown (it may come from the environment).
type env struct {
	vars map[string]varVal
	// poisoned is permanent: something (source, a dynamic eval, a nameref)
	// may have changed any variable or how assignments behave, so every
	// lookup is unknown from then on.
	poisoned bool
	// defaultsUnknown: HOME and IFS may have been changed (a function call,
	// or the body of a function analysed without its caller's state).
	defaultsUnknown bool
	pos             []string // positional parameters $1...
	posKnown        bool
	arg0            string
	arg0Known       bool
}

const defaultIFS = " \t\n"

func (e *env) lookup(name string) (string, bool) {
	if e.poisoned {
		return "", false
	}
	if v, ok := e.vars[name]; ok {
		if v.sticky {
			return "", false
		}
		return v.s, v.known
	}
	if e.defaultsUnknown {
		return "", false
	}
	switch name {
	case "HOME":
		return "~", true
	case "IFS":
		return defaultIFS, true
	}
	return "", false
}

func (e *env) set(name, s string, known bool) {
	if e.vars == nil {
		e.vars = make(map[string]varVal, 4)
	}
	old := e.vars[name]
	if old.sticky {
		e.vars[name] = varVal{sticky: true}
		return
	}
	e.vars[name] = varVal{s: s, known: known}
}

func (e *env) unknown(name string) { e.set(name, "", false) }

func (e *env) makeSticky(name string) {
	if e.vars == nil {
		e.vars = make(map[string]varVal, 4)
	}
	e.vars[name] = varVal{sticky: true}
}

// softPoison forgets every known value, as after a call of a function that
// may assign anything.
func (e *env) softPoison() {
	for k, v := range e.vars {
		v.known, v.s = false, ""
		e.vars[k] = v
	}
	e.defaultsUnknown = true
	e.posKnown = false
}

func (e *env) clone() env {
	c := *e
	c.vars = nil // never share e's map: what e sets later must not show in c
	if len(e.vars) > 0 {
		c.vars = make(map[string]varVal, len(e.vars))
		for k, v := range e.vars {
			c.vars[k] = v
		}
	}
	return c
}

// mergeFrom makes every variable whose value differs from snap unknown: it is
// called after code that may or may not have run.
func (e *env) mergeFrom(snap *env) {
	if len(e.vars) == 0 && len(snap.vars) == 0 {
		// Neither has a variable: only the flags and parameters merge.
		e.mergeFlags(snap)
		return
	}
	for k, v := range e.vars {
		if o, ok := snap.vars[k]; !ok || o != v {
			if v.known {
				v.known, v.s = false, ""
				e.vars[k] = v
			}
		}
	}
	for k, o := range snap.vars {
		if _, ok := e.vars[k]; !ok {
			if e.vars == nil {
				e.vars = make(map[string]varVal, len(snap.vars))
			}
			e.vars[k] = varVal{sticky: o.sticky}
		}
	}
	e.mergeFlags(snap)
}

// mergeFlags is mergeFrom for the positional parameters and the flags.
func (e *env) mergeFlags(snap *env) {
	if e.posKnown != snap.posKnown || !equalStrings(e.pos, snap.pos) {
		e.posKnown = false
	}
	e.defaultsUnknown = e.defaultsUnknown || snap.defaultsUnknown
	e.poisoned = e.poisoned || snap.poisoned
}

// restore returns to snap after a subshell, keeping the permanent flags.
func (e *env) restore(snap env) {
	poisoned := e.poisoned
	*e = snap
	e.poisoned = e.poisoned || poisoned
}

// child returns the environment of a new shell process started from e: only
// exported variables pass, so every variable is unknown except HOME (passed
// on) and IFS (reset by the shell).
func (e *env) child() *env {
	c := &env{defaultsUnknown: false}
	home, ok := e.lookup("HOME")
	if !ok {
		c.set("HOME", "", false)
	} else if home != "~" {
		c.set("HOME", home, true)
	}
	return c
}

// funcEnv is the environment a function body is analysed in: its caller's
// state is not known, so everything is unknown.
func funcEnv() *env {
	return &env{defaultsUnknown: true}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

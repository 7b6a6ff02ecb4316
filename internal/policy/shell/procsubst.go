package shell

// ProcSubst reports whether the word is the file name of a process substitution (<(...) or
// >(...)), whose commands are analysed on their own.
func (w Word) ProcSubst() bool { return w.procSubst }

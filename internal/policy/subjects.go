package policy

import "slices"

// PassportsForServiceAccount returns the names of the passports whose spec.subjects.serviceAccounts
// list the ServiceAccount sa (of the snapshot's namespace), sorted. The index is built on first use.
func (s *Snapshot) PassportsForServiceAccount(sa string) []string {
	s.saOnce.Do(func() {
		s.bySA = map[string][]string{}
		for name, p := range s.passports {
			for _, a := range p.src.Spec.Subjects.ServiceAccounts {
				if !slices.Contains(s.bySA[a], name) {
					s.bySA[a] = append(s.bySA[a], name)
				}
			}
		}
		for _, names := range s.bySA {
			slices.Sort(names)
		}
	})
	return slices.Clone(s.bySA[sa])
}

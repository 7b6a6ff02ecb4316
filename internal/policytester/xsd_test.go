package policytester

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// A validator for the XML Schema constructs testdata/junit-10.xsd uses (no Go XSD validator is both
// pure Go and well kept): top-level xs:element declarations with an inline or named xs:complexType
// (mixed or not) or a simple type; xs:sequence and xs:choice of element references and local
// elements with minOccurs/maxOccurs; xs:attribute with use="required" and a type that is xs:string or
// a named xs:simpleType restricting xs:string by xs:pattern. An instance is valid when its root is a
// declared element and, recursively, every element has only declared attributes, every required
// attribute, attribute values matching their patterns, only children its content model allows
// (within their maxOccurs, and at least minOccurs of a required sequence member), and text only when
// mixed or simple. Anything else the schema says would make loadSchema fail, so a schema this
// validator cannot read is an error, never a pass.

type xsdNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xsdNode  `xml:",any"`
}

func (n *xsdNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// elemType is what an element may hold.
type elemType struct {
	simple   bool // text only
	mixed    bool
	attrs    map[string]*regexp.Regexp // attribute → pattern (nil: any string)
	required []string
	children map[string]occurs // allowed child → bounds
}

type occurs struct{ min, max int } // max < 0: unbounded

type schema struct {
	elements map[string]*elemType
}

func loadSchema(path string) (*schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root xsdNode
	if err := xml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	simpleTypes := map[string]*regexp.Regexp{}
	complexTypes := map[string]*xsdNode{}
	for i := range root.Children {
		c := &root.Children[i]
		switch c.XMLName.Local {
		case "simpleType":
			re, err := simplePattern(c)
			if err != nil {
				return nil, err
			}
			simpleTypes[c.attr("name")] = re
		case "complexType":
			complexTypes[c.attr("name")] = c
		}
	}
	s := &schema{elements: map[string]*elemType{}}
	for i := range root.Children {
		c := &root.Children[i]
		switch c.XMLName.Local {
		case "simpleType", "complexType":
			continue
		case "element":
		default:
			return nil, fmt.Errorf("unsupported top-level construct xs:%s", c.XMLName.Local)
		}
		et, err := elementType(c, complexTypes, simpleTypes)
		if err != nil {
			return nil, fmt.Errorf("element %s: %w", c.attr("name"), err)
		}
		s.elements[c.attr("name")] = et
	}
	return s, nil
}

func simplePattern(st *xsdNode) (*regexp.Regexp, error) {
	if len(st.Children) != 1 || st.Children[0].XMLName.Local != "restriction" || st.Children[0].attr("base") != "xs:string" {
		return nil, fmt.Errorf("simple type %s: only xs:string restrictions are supported", st.attr("name"))
	}
	var pats []string
	for _, f := range st.Children[0].Children {
		if f.XMLName.Local != "pattern" {
			return nil, fmt.Errorf("simple type %s: facet %s not supported", st.attr("name"), f.XMLName.Local)
		}
		pats = append(pats, f.attr("value"))
	}
	return regexp.Compile("^(?:" + strings.Join(pats, "|") + ")$")
}

func elementType(e *xsdNode, complexTypes map[string]*xsdNode, simpleTypes map[string]*regexp.Regexp) (*elemType, error) {
	if t := e.attr("type"); t != "" {
		if t == "xs:string" {
			return &elemType{simple: true}, nil
		}
		ct, ok := complexTypes[t]
		if !ok {
			return nil, fmt.Errorf("unknown type %s", t)
		}
		return complexType(ct, simpleTypes)
	}
	for i := range e.Children {
		if e.Children[i].XMLName.Local == "complexType" {
			return complexType(&e.Children[i], simpleTypes)
		}
	}
	return nil, fmt.Errorf("no type")
}

func complexType(ct *xsdNode, simpleTypes map[string]*regexp.Regexp) (*elemType, error) {
	et := &elemType{mixed: ct.attr("mixed") == "true", attrs: map[string]*regexp.Regexp{}, children: map[string]occurs{}}
	for i := range ct.Children {
		c := &ct.Children[i]
		switch c.XMLName.Local {
		case "attribute":
			var re *regexp.Regexp
			if t := c.attr("type"); t != "xs:string" {
				var ok bool
				if re, ok = simpleTypes[t]; !ok {
					return nil, fmt.Errorf("attribute %s: unknown type %s", c.attr("name"), t)
				}
			}
			et.attrs[c.attr("name")] = re
			if c.attr("use") == "required" {
				et.required = append(et.required, c.attr("name"))
			}
		case "sequence", "choice":
			if err := particles(c, et, 1, 1, c.XMLName.Local == "choice"); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unsupported construct xs:%s", c.XMLName.Local)
		}
	}
	return et, nil
}

func bounds(n *xsdNode) (int, int) {
	lo, hi := 1, 1
	if v := n.attr("minOccurs"); v != "" {
		_, _ = fmt.Sscan(v, &lo)
	}
	switch v := n.attr("maxOccurs"); v {
	case "":
	case "unbounded":
		hi = -1
	default:
		_, _ = fmt.Sscan(v, &hi)
	}
	return lo, hi
}

// particles adds the elements of a sequence or choice, whose own bounds multiply theirs; members of
// a choice are never individually required.
func particles(group *xsdNode, et *elemType, outerMin, outerMax int, inChoice bool) error {
	gmin, gmax := bounds(group)
	gmin *= outerMin
	if gmax < 0 || outerMax < 0 {
		gmax = -1
	} else {
		gmax *= outerMax
	}
	choice := inChoice || group.XMLName.Local == "choice"
	for i := range group.Children {
		c := &group.Children[i]
		switch c.XMLName.Local {
		case "element":
			name := c.attr("ref")
			if name == "" {
				name = c.attr("name")
			}
			lo, hi := bounds(c)
			lo *= gmin
			if choice {
				lo = 0
			}
			if hi < 0 || gmax < 0 {
				hi = -1
			} else {
				hi *= gmax
			}
			et.children[name] = occurs{lo, hi}
		case "sequence", "choice":
			if err := particles(c, et, gmin, gmax, choice); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unsupported particle xs:%s", c.XMLName.Local)
		}
	}
	return nil
}

// frame is an open element during validation.
type frame struct {
	name   string
	t      *elemType
	counts map[string]int
}

// validate checks an instance document against the schema and returns every violation.
func (s *schema) validate(r io.Reader) []string {
	dec := xml.NewDecoder(r)
	var problems []string
	var stack []*frame
	rooted := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return append(problems, "not well-formed XML: "+err.Error())
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				if rooted {
					problems = append(problems, "more than one root element")
				}
				rooted = true
			}
			var f *frame
			f, problems = s.start(tk, stack, problems)
			stack = append(stack, f)
		case xml.EndElement:
			problems = stack[len(stack)-1].end(problems)
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && strings.TrimSpace(string(tk)) != "" {
				f := stack[len(stack)-1]
				if f.t != nil && !f.t.simple && !f.t.mixed {
					problems = append(problems, fmt.Sprintf("<%s> may not hold text", f.name))
				}
			}
		}
	}
	if !rooted {
		problems = append(problems, "no root element")
	}
	return problems
}

// start checks an element's place under its parent and its attributes, and opens its frame.
func (s *schema) start(tk xml.StartElement, stack []*frame, problems []string) (*frame, []string) {
	name := tk.Name.Local
	et, ok := s.elements[name]
	if len(stack) == 0 {
		if !ok {
			problems = append(problems, "root element "+name+" is not declared")
		}
	} else if parent := stack[len(stack)-1]; parent.t != nil {
		if _, allowed := parent.t.children[name]; !allowed {
			problems = append(problems, fmt.Sprintf("<%s> may not contain <%s>", parent.name, name))
		}
		parent.counts[name]++
	}
	if ok {
		problems = checkAttrs(name, et, tk.Attr, problems)
	}
	return &frame{name: name, t: et, counts: map[string]int{}}, problems
}

// checkAttrs checks an element's attributes against its type.
func checkAttrs(name string, et *elemType, attrs []xml.Attr, problems []string) []string {
	seen := map[string]bool{}
	for _, a := range attrs {
		if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
			continue
		}
		seen[a.Name.Local] = true
		re, declared := et.attrs[a.Name.Local]
		switch {
		case !declared:
			problems = append(problems, fmt.Sprintf("<%s> has undeclared attribute %s", name, a.Name.Local))
		case re != nil && !re.MatchString(a.Value):
			problems = append(problems, fmt.Sprintf("<%s %s=%q> does not match %s", name, a.Name.Local, a.Value, re))
		}
	}
	for _, req := range et.required {
		if !seen[req] {
			problems = append(problems, fmt.Sprintf("<%s> lacks required attribute %s", name, req))
		}
	}
	return problems
}

// end checks the counts of the children a closing element held.
func (f *frame) end(problems []string) []string {
	if f.t == nil {
		return problems
	}
	for child, o := range f.t.children {
		n := f.counts[child]
		if n < o.min || (o.max >= 0 && n > o.max) {
			problems = append(problems, fmt.Sprintf("<%s> holds %d <%s>, want %d..%d", f.name, n, child, o.min, o.max))
		}
	}
	return problems
}

// TestSchemaValidatorRejects: the validator catches what junit-10.xsd forbids, so that a passing
// validation means something.
func TestSchemaValidatorRejects(t *testing.T) {
	s, err := loadSchema("testdata/junit-10.xsd")
	if err != nil {
		t.Fatal(err)
	}
	valid := `<testsuites><testsuite name="a" tests="1" failures="0" errors="0" time="0.001"><testcase name="c"><failure message="m">text</failure></testcase></testsuite></testsuites>`
	if p := s.validate(strings.NewReader(valid)); len(p) > 0 {
		t.Fatalf("a valid document rejected: %v", p)
	}
	for _, bad := range []string{
		`<testsuites><testsuite name="a" tests="1" failures="0"/></testsuites>`,                                                    // errors missing
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0" time="1.5s"/></testsuites>`,                             // time pattern
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>`,                   // testcase name
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="c" line="3"/></testsuite></testsuites>`, // attribute
		`<testsuites><testcase name="c"/></testsuites>`,                                                                            // testcase outside a suite
		`<testsuites>text</testsuites>`,
		`<testsuite-list/>`,
	} {
		if p := s.validate(strings.NewReader(bad)); len(p) == 0 {
			t.Errorf("invalid document accepted: %s", bad)
		}
	}
}

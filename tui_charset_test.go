package main

import "testing"

func TestTermCapsFromTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want termCaps
	}{
		{nil, termCaps{}},
		{map[string]string{"NO_COLOR": "1"}, termCaps{noColor: true}},
		{map[string]string{"NO_COLOR": ""}, termCaps{}},
		{map[string]string{"LANG": "en_US.UTF-8"}, termCaps{}},
		{map[string]string{"LANG": "de_DE.utf8@euro"}, termCaps{}},
		{map[string]string{"LANG": "C"}, termCaps{ascii: true}},
		{map[string]string{"LANG": "POSIX"}, termCaps{ascii: true}},
		{map[string]string{"LANG": "en_US.ISO-8859-1"}, termCaps{ascii: true}},
		{map[string]string{"LANG": "en_US.UTF-8", "LC_CTYPE": "C"}, termCaps{ascii: true}},
		{map[string]string{"LC_ALL": "C.UTF-8", "LC_CTYPE": "C"}, termCaps{}},
	} {
		if got := detectTermCaps(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.env, got, c.want)
		}
	}
}

func TestTermCapsFilter(t *testing.T) {
	t.Parallel()
	in := "\x1b[0;1;32m✓ \x1b[0m界 é\u0301 \x1b]0;t\x07\x1b[2;36m›\x1b[0m ⠋ \xff"
	for _, c := range []struct {
		caps termCaps
		want string
	}{
		{termCaps{}, in},
		{termCaps{noColor: true}, "\x1b[0;1m✓ \x1b[0m界 é\u0301 \x1b]0;t\x07\x1b[2m›\x1b[0m ⠋ \xff"},
		{termCaps{ascii: true}, "\x1b[0;1;32m+ \x1b[0m?? ? \x1b]0;t\x07\x1b[2;36m>\x1b[0m | ?"},
	} {
		if got := string(c.caps.filter([]byte(in))); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.caps, got, c.want)
		}
	}
}

package main

import (
	"math/rand"
	"strings"
	"testing"
)

// highlightSamples are code blocks in each family zot highlights, with
// what crosses lines: block comments, triple-quoted and raw strings.
var highlightSamples = []struct{ lang, code, want string }{
	{"go", "func main() { s := \"x\\\"y\" + `raw` // note\n\tn := 0x1F + 3.5; var r rune = '\\''\n/* block\nstill */ return nil",
		"[magenta]func[/] main() { s := [green]\"x\\\"y\"[/] + [green]`raw`[/] [i,gray]// note[/]\n" +
			"    n := [yellow]0x1F[/] + [yellow]3.5[/]; [magenta]var[/] r [blue]rune[/] = [green]'\\''[/]\n" +
			"[i,gray]/* block[/]\n[i,gray]still */[/] [magenta]return[/] [yellow]nil[/]"},
	{"python", "def f(x):\n    '''doc\n    more''' # c\n    return \"\" + 'a' + None  # done",
		"[magenta]def[/] f(x):\n    [green]'''doc[/]\n[green]    more'''[/] [i,gray]# c[/]\n" +
			"    [magenta]return[/] [green]\"\"[/] + [green]'a'[/] + [yellow]None[/]  [i,gray]# done[/]"},
	{"ts", "const a: string = `t ${x}`; // c\nlet $el = null; /* c */",
		"[magenta]const[/] a: [blue]string[/] = [green]`t ${x}`[/]; [i,gray]// c[/]\n[magenta]let[/] $el = [yellow]null[/]; [i,gray]/* c */[/]"},
	{"bash", "if [ -n \"$HOME\" ]; then echo ${PATH} $1 # comment\nfi; echo a#b 'it''s'",
		"[magenta]if[/] [ -n [green]\"$HOME\"[/] ]; [magenta]then[/] echo [cyan]${PATH}[/] [cyan]$1[/] [i,gray]# comment[/]\n" +
			"[magenta]fi[/]; echo a#b [green]'it''s'[/]"},
	{"json", "{\"a\": [1, 2.5, true, null], \"b\": \"s\"}",
		"{[green]\"a\"[/]: [[yellow]1[/], [yellow]2.5[/], [yellow]true[/], [yellow]null[/]], [green]\"b\"[/]: [green]\"s\"[/]}"},
	{"yaml", "key: value # c\n- name: x\n  enabled: true\nurl: http://x",
		"[blue]key[/]: value [i,gray]# c[/]\n- [blue]name[/]: x\n  [blue]enabled[/]: [yellow]true[/]\n[blue]url[/]: http://x"},
	{"rust", "fn f<'a>(s: &'a str) -> char { let c = 'x'; let d = '\\n'; }",
		"[magenta]fn[/] f<'a>(s: &'a [blue]str[/]) -> [blue]char[/] { [magenta]let[/] c = [green]'x'[/]; [magenta]let[/] d = [green]'\\n'[/]; }"},
	{"c", "#include <stdio.h>\nint main(void) { char c = 'a'; return 0; }",
		"[magenta]#include[/] <stdio.h>\n[magenta]int[/] main([magenta]void[/]) { [magenta]char[/] c = [green]'a'[/]; [magenta]return[/] [yellow]0[/]; }"},
	{"java", "String s = \"\"\"\n  text \"quoted\"\n  \"\"\"; int n = 1;",
		"String s = [green]\"\"\"[/]\n[green]  text \"quoted\"[/]\n[green]  \"\"\"[/]; [magenta]int[/] n = [yellow]1[/];"},
	{"diff", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n ctx",
		"[red]--- a/x[/]\n[green]+++ b/x[/]\n[cyan]@@ -1 +1 @@[/]\n[red]-old[/]\n[green]+new[/]\n ctx"},
	{"text", "func plain() // not highlighted", "[cyan]func plain() // not highlighted[/]"},
}

// Each family's keywords, strings, comments and numbers, drawn whole.
func TestHighlightColoursEachFamily(t *testing.T) {
	t.Parallel()
	for _, c := range highlightSamples {
		rows := renderMarkdown("```"+c.lang+"\n"+c.code+"\n```\nafter", 120, 0)
		var got []string
		for _, r := range rows[1 : len(rows)-2] {
			got = append(got, tagged(r))
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.lang, strings.Join(got, "\n"), c.want)
		}
		if tail := tagged(rows[len(rows)-1]); tail != "after" {
			t.Errorf("%s: the block did not end: %q", c.lang, tail)
		}
	}
	if codeLang("```Go title=x") != codeLangs()["go"] || codeLang("~~~ {.python}") != codeLangs()["python"] || codeLangs()["go"] == nil || codeLang("```brainfuck") != nil {
		t.Errorf("the language is not read from the info string")
	}
}

// checkCodeStream checks that code in lang streams, cut at every byte and
// in random pieces, exactly as it draws whole, line after line.
func checkCodeStream(t *testing.T, lang, code string, rng *rand.Rand) {
	t.Helper()
	var st mdState
	parseMarkdownLine(nil, "```"+lang, &st, 0)
	for _, line := range strings.Split(code, "\n") {
		for i := 0; i <= len(line) && i < 200; i++ {
			checkMarkdownStreamIn(t, line, st, []int{i})
		}
		var cuts []int
		for at := 0; at < len(line); at += 1 + rng.Intn(5) {
			cuts = append(cuts, at)
		}
		checkMarkdownStreamIn(t, line, st, cuts)
		parseMarkdownLine(nil, line, &st, 0)
	}
}

var highlightEdges = []string{
	"x = '''", "'''a''' b", `"""`, `"" "x"`, `'\''`, "'a", "'", "'ab'", `"unterminated`, "/", "//", "/*", "*/", "a/b",
	strings.Repeat("w", 40) + " if", strings.Repeat("9", 40) + ".5", "日本 // コメント", "$", "${", "${x", "#", "# x", "a #b",
	"\t\tx", "key:", "- a: b", "  -", "\x1b[31mred\x1b[0m if", "e\u0301if", "`", "``", "'\\", "\"\\",
}

// Highlighted code streams exactly as it draws whole.
func TestHighlightStreamsLikeTheWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(4))
	for _, c := range highlightSamples {
		checkCodeStream(t, c.lang, c.code, rng)
	}
	for lang := range codeLangs() {
		checkCodeStream(t, lang, strings.Join(highlightEdges, "\n"), rng)
	}
}

func FuzzHighlightStream(f *testing.F) {
	langs := []string{"go", "python", "js", "sh", "json", "yaml", "c", "java", "rust", "cs", "diff"}
	for i, s := range append(highlightEdges, "def f():\n  '''x\n'''", "/* a\n b */ c") {
		f.Add(s, uint8(i), int64(i))
	}
	f.Fuzz(func(t *testing.T, code string, lang uint8, seed int64) {
		if len(code) > 600 {
			code = code[:600]
		}
		checkCodeStream(t, langs[int(lang)%len(langs)], code, rand.New(rand.NewSource(seed)))
	})
}

// Text in a code block cannot write escapes, highlighted or not: the
// terminal emulator fails the test on any escape the renderer would not
// write.
func TestHighlightedCodeNeverEmitsEscapes(t *testing.T) {
	t.Parallel()
	hostile := "x\x1b]0;TITLE\x07 \x1b[2J\"\x1b[31ms\" // \x1b]52;c;cHduZWQ=\x07 \u009b2J\r"
	for lang := range codeLangs() {
		tui, v := newTestTUI(t, 80, 24)
		feed(tui, Event{Type: "assistant_start"})
		for _, piece := range []string{"```" + lang + "\n", hostile[:7], hostile[7:], "\n```\n"} {
			feed(tui, Event{Type: "text_delta", Delta: piece})
		}
		feed(tui, Event{Type: "assistant_message"})
		if s := v.String(); strings.Contains(s, "TITLE") || strings.Contains(s, "cHduZWQ") || !strings.Contains(s, "x␛ ␛") {
			t.Errorf("%s:\n%s", lang, s)
		}
	}
}

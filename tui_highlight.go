package main

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Syntax highlighting for fenced code blocks: one small lexer, driven by a
// table per family of languages, that colours keywords, strings, comments
// and numbers. It reads clean text (the sanitiser has run) a character at
// a time as it streams, each byte once: what a character decides goes to
// the cells at once, and only what the next character still decides — a
// word that may be a keyword, a '/' that may open a comment, a quote that
// may open a character literal — waits, at most a few bytes. Blocks in a
// language it does not know stay one colour.

// lexLang is what the lexer knows of a family of languages.
type lexLang struct {
	keywords, literals, types map[string]bool

	slashComments  bool   // // and /* */
	hashComments   bool   // # to the end of the line
	hashAfterBlank bool   // … only at the start of a word (shell, YAML: $# and a#b are not comments)
	preprocessor   bool   // # and a word at the start of a line is a directive (C, C++, C#)
	quotes         string // the characters that open a string
	multiline      string // … of those, the ones whose strings go on past the end of the line
	raw            string // … the ones inside which a backslash escapes nothing
	triple         bool   // """ and ''' open strings that go on past the end of the line
	charQuote      bool   // ' opens a character literal only when it closes ('a' yes, Rust's 'a no)
	dollarVars     bool   // $NAME and ${…} (shell)
	dollarWords    bool   // $ is part of a word (JavaScript)
	wordDash       bool   // - and . are part of a word (YAML keys)
	yamlKeys       bool   // the first word of a line followed by ':' is a key
	diff           bool   // a line is coloured by its first character
}

// Styles of highlighted code; the block's base style (dim for thinking) is
// added to each.
const (
	hlKeyword = fgMagenta
	hlString  = fgGreen
	hlComment = fgGray | sItalic
	hlNumber  = fgYellow
	hlType    = fgBlue
	hlKey     = fgBlue
	hlVar     = fgCyan
)

func hlWords(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

const cKeywords = "auto break case char const continue default do double else enum extern float for goto if inline " +
	"int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "

// codeLangs maps the names a fence's info string gives to the lexers,
// built on first use: a run that shows no code does not keep the tables.
var codeLangs = sync.OnceValue(func() map[string]*lexLang {
	langGo := &lexLang{
		keywords: hlWords("break case chan const continue default defer else fallthrough for func go goto if import " +
			"interface map package range return select struct switch type var"),
		literals: hlWords("true false nil iota"),
		types: hlWords("any bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 " +
			"rune string uint uint8 uint16 uint32 uint64 uintptr"),
		slashComments: true, quotes: "\"'`", multiline: "`", raw: "`",
	}
	langPython := &lexLang{
		keywords: hlWords("and as assert async await break class continue def del elif else except finally for from " +
			"global if import in is lambda match case nonlocal not or pass raise return try while with yield"),
		literals:     hlWords("True False None"),
		hashComments: true, quotes: "\"'", triple: true,
	}
	langJS := &lexLang{
		keywords: hlWords("abstract as async await break case catch class const continue debugger declare default delete do " +
			"else enum export extends finally for from function get if implements import in instanceof interface keyof let " +
			"namespace new of private protected public readonly return satisfies set static super switch this throw try " +
			"type typeof var void while with yield"),
		literals:      hlWords("true false null undefined NaN Infinity"),
		types:         hlWords("any bigint boolean never number object string symbol unknown"),
		slashComments: true, quotes: "\"'`", multiline: "`", dollarWords: true,
	}
	langShell := &lexLang{
		keywords: hlWords("if then else elif fi for while until do done case esac in function select time return export " +
			"local readonly declare unset shift exit break continue source alias set eval exec trap"),
		hashComments: true, hashAfterBlank: true, quotes: "\"'", multiline: "\"'", raw: "'", dollarVars: true,
	}
	langJSON := &lexLang{
		literals:      hlWords("true false null"),
		slashComments: true, quotes: "\"",
	}
	langYAML := &lexLang{
		literals:     hlWords("true false null yes no on off True False Null Yes No On Off TRUE FALSE NULL"),
		hashComments: true, hashAfterBlank: true, quotes: "\"'", wordDash: true, yamlKeys: true,
	}
	langC := &lexLang{
		keywords: hlWords(cKeywords + "alignas alignof asm bool catch class constexpr const_cast decltype delete " +
			"dynamic_cast explicit export friend mutable namespace new noexcept operator override private protected public " +
			"reinterpret_cast static_assert static_cast template this throw try typeid typename using virtual"),
		literals:      hlWords("true false NULL nullptr"),
		slashComments: true, preprocessor: true, quotes: "\"'", charQuote: true,
	}
	langJava := &lexLang{
		keywords: hlWords("abstract assert boolean break byte case catch char class const continue default do double else " +
			"enum extends final finally float for goto if implements import instanceof int interface long native new " +
			"package permits private protected public record return sealed short static strictfp super switch " +
			"synchronized this throw throws transient try var void volatile while yield"),
		literals:      hlWords("true false null"),
		slashComments: true, quotes: "\"'", charQuote: true, triple: true,
	}
	langRust := &lexLang{
		keywords: hlWords("as async await break const continue crate dyn else enum extern fn for if impl in let loop match " +
			"mod move mut pub ref return self Self static struct super trait type unsafe use where while"),
		literals: hlWords("true false None Some Ok Err"),
		types: hlWords("bool char str String i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 Option Result " +
			"Vec Box"),
		slashComments: true, quotes: "\"'", charQuote: true,
	}
	langCSharp := &lexLang{
		keywords: hlWords("abstract as async await base bool break byte case catch char checked class const continue " +
			"decimal default delegate do double else enum event explicit extern finally fixed float for foreach get goto " +
			"if implicit in init int interface internal is lock long namespace new object operator out override params " +
			"private protected public readonly record ref return sbyte sealed set short sizeof stackalloc static string " +
			"struct switch this throw try typeof uint ulong unchecked unsafe ushort using var virtual void volatile when " +
			"where while yield"),
		literals:      hlWords("true false null"),
		slashComments: true, preprocessor: true, quotes: "\"'", charQuote: true, triple: true,
	}
	langDiff := &lexLang{diff: true}
	return map[string]*lexLang{
		"go": langGo, "golang": langGo,
		"python": langPython, "py": langPython, "python3": langPython,
		"javascript": langJS, "js": langJS, "jsx": langJS, "mjs": langJS, "cjs": langJS,
		"typescript": langJS, "ts": langJS, "tsx": langJS,
		"sh": langShell, "bash": langShell, "shell": langShell, "zsh": langShell, "ksh": langShell, "console": langShell,
		"json": langJSON, "jsonc": langJSON, "json5": langJSON,
		"yaml": langYAML, "yml": langYAML,
		"c": langC, "h": langC, "cpp": langC, "c++": langC, "cc": langC, "cxx": langC, "hpp": langC,
		"java": langJava, "rust": langRust, "rs": langRust, "csharp": langCSharp, "cs": langCSharp, "c#": langCSharp,
		"diff": langDiff, "patch": langDiff,
	}
})

// codeLang is the lexer for the info string after a fence's opening
// ("```go", "~~~ {.python}"): its first word, case aside; nil when the
// language is not one zot highlights.
func codeLang(info string) *lexLang {
	info = strings.TrimLeft(info, "`~ ")
	name, _, _ := strings.Cut(info, " ")
	name = strings.ToLower(strings.Trim(name, "{}."))
	return codeLangs()[name]
}

// lexState is what one line of code leaves open for the next: a block
// comment or a string that goes on.
type lexState struct {
	mode  lexMode
	quote byte
}

type lexMode uint8

const (
	lexCode lexMode = iota
	lexBlockComment
	lexString
	lexTriple // in """ or '''
	lexLineComment
	lexOpening  // read one or two quotes that may open a triple-quoted string
	lexVar      // in $NAME
	lexBraceVar // in ${…}
)

// maxWord bounds a word held back to see whether it is a keyword; a
// longer one is none and is drawn as it comes.
const maxWord = 32

// codeLexer highlights one line of code in a language. Copying it copies
// what it holds back, which is how a line that is still streaming is shown
// as if it ended.
type codeLexer struct {
	lang *lexLang
	base style
	lexState

	word     [maxWord]byte // a word held back: a keyword or not?
	wordN    int
	wordLong bool  // the word outgrew maxWord: drawn as it comes, in wordSt
	wordSt   style // … in this style
	slash    bool  // a '/' held back: a comment or not?
	char     [1 + utf8.UTFMax]byte
	charN    int   // a quote and the character after it, held back: a character literal or not?
	run      int   // quotes in a row, opening or closing a triple-quoted string
	escaped  bool  // the last character in a string was an escaping backslash
	star     bool  // the last character in a block comment was '*'
	prev     rune  // the character before, ' ' at the start of the line
	begun    bool  // a character other than a blank was read
	keyStart bool  // YAML: nothing yet but blanks and "- ", so a word may be a key
	diffRead bool  // diff: the first character of the line was read …
	lineSt   style // … and decided the line's style
}

func newCodeLexer(lang *lexLang, st lexState, base style) codeLexer {
	return codeLexer{lang: lang, base: base, lexState: st, prev: ' ', keyStart: true}
}

// write appends the cells of the clean text that it decides.
func (x *codeLexer) write(dst []cell, text string) []cell {
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		dst = x.rune(dst, r, text[i:i+size])
		i += size
	}
	return dst
}

// end appends what was held back, now that the line is over, and returns
// the state for the next line: a string in a quote that cannot span lines
// ends with it.
func (x *codeLexer) end(dst []cell) ([]cell, lexState) {
	for x.wordN > 0 || x.slash || x.charN > 0 {
		dst = x.settle(dst)
	}
	st := x.lexState
	if st.mode != lexBlockComment && st.mode != lexTriple &&
		(st.mode != lexString || !strings.ContainsRune(x.lang.multiline, rune(st.quote))) {
		st = lexState{}
	}
	return dst, st
}

// settle draws what is held back as the end of the line decides it.
func (x *codeLexer) settle(dst []cell) []cell {
	switch {
	case x.wordN > 0:
		return x.settleWord(dst, 0)
	case x.slash:
		x.slash = false
		return x.emit(dst, "/", 0)
	case x.charN > 0:
		held := string(x.char[1:x.charN])
		x.charN = 0
		dst = x.emit(dst, "'", 0)
		if held != "" {
			r, _ := utf8.DecodeRuneInString(held)
			dst = x.rune(dst, r, held)
		}
	}
	return dst
}

func (x *codeLexer) emit(dst []cell, s string, st style) []cell {
	return appendCells(dst, s, x.base|st)
}

func (x *codeLexer) settleWord(dst []cell, next rune) []cell {
	w := string(x.word[:x.wordN])
	x.wordN = 0
	st := x.wordStyle(w, next)
	x.keyStart = false
	return x.emit(dst, w, st)
}

// wordStyle is how a whole word is drawn, next being the character after.
func (x *codeLexer) wordStyle(w string, next rune) style {
	l := x.lang
	switch {
	case w[0] >= '0' && w[0] <= '9':
		return hlNumber
	case w[0] == '#':
		return hlKeyword
	case l.yamlKeys && x.keyStart && next == ':':
		return hlKey
	case l.keywords[w]:
		return hlKeyword
	case l.literals[w]:
		return hlNumber
	case l.types[w]:
		return hlType
	}
	return 0
}

func (x *codeLexer) isWordRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		x.lang.wordDash && (r == '-' || r == '.') || x.lang.dollarWords && r == '$'
}

// rune reads one character.
func (x *codeLexer) rune(dst []cell, r rune, rs string) []cell {
	dst = x.read(dst, r, rs)
	x.prev = r
	if !isBlank(r) {
		x.begun = true
		if r != '-' && x.wordN == 0 {
			x.keyStart = false
		}
	}
	return dst
}

func (x *codeLexer) read(dst []cell, r rune, rs string) []cell {
	if x.lang.diff {
		if !x.diffRead {
			x.diffRead = true
			switch r {
			case '+':
				x.lineSt = fgGreen
			case '-':
				x.lineSt = fgRed
			case '@':
				x.lineSt = fgCyan
			}
		}
		return x.emit(dst, rs, x.lineSt)
	}
	// First what was held back, now that the character after it is known.
	switch {
	case x.wordN > 0:
		if x.isWordRune(r) || r == '.' && x.word[0] >= '0' && x.word[0] <= '9' {
			if x.wordN+len(rs) <= maxWord {
				x.wordN += copy(x.word[x.wordN:], rs)
				return dst
			}
			w := string(x.word[:x.wordN])
			x.wordN, x.wordLong, x.wordSt = 0, true, 0
			if w[0] >= '0' && w[0] <= '9' {
				x.wordSt = hlNumber
			}
			x.keyStart = false
			return x.emit(x.emit(dst, w, x.wordSt), rs, x.wordSt)
		}
		dst = x.settleWord(dst, r)
	case x.wordLong:
		if x.isWordRune(r) || r == '.' && x.wordSt == hlNumber {
			return x.emit(dst, rs, x.wordSt)
		}
		x.wordLong = false
	case x.slash:
		x.slash = false
		switch r {
		case '/':
			x.mode = lexLineComment
			return x.emit(dst, "//", hlComment)
		case '*':
			x.mode, x.star = lexBlockComment, false
			return x.emit(dst, "/*", hlComment)
		}
		dst = x.emit(dst, "/", 0)
	case x.charN == 1:
		x.charN = 0
		switch r {
		case '\\':
			x.mode, x.quote, x.escaped = lexString, '\'', true
			return x.emit(dst, "'\\", hlString)
		case '\'':
			return x.emit(dst, "''", hlString)
		}
		x.charN = 1 + copy(x.char[1:], rs)
		return dst
	case x.charN > 1:
		held := string(x.char[1:x.charN])
		x.charN = 0
		if r == '\'' {
			return x.emit(dst, "'"+held+"'", hlString)
		}
		// Not a character literal: a lifetime ('a), or a quote on its own.
		dst = x.emit(dst, "'", 0)
		hr, _ := utf8.DecodeRuneInString(held)
		dst = x.rune(dst, hr, held)
		return x.read(dst, r, rs)
	}
	switch x.mode {
	case lexLineComment:
		return x.emit(dst, rs, hlComment)
	case lexBlockComment:
		if x.star && r == '/' {
			x.mode = lexCode
		}
		x.star = r == '*'
		return x.emit(dst, rs, hlComment)
	case lexString, lexTriple:
		return x.inString(dst, r, rs)
	case lexOpening:
		switch {
		case r == rune(x.quote):
			if x.run++; x.run == 3 {
				x.mode, x.run = lexTriple, 0
			}
			return x.emit(dst, rs, hlString)
		case x.run == 1:
			x.mode = lexString
			return x.inString(dst, r, rs)
		}
		x.mode = lexCode // "" was an empty string
	case lexVar:
		if x.isWordRune(r) {
			return x.emit(dst, rs, hlVar)
		}
		x.mode = lexCode
	case lexBraceVar:
		if r == '}' {
			x.mode = lexCode
		}
		return x.emit(dst, rs, hlVar)
	}
	return x.code(dst, r, rs)
}

// inString reads a character inside a string.
func (x *codeLexer) inString(dst []cell, r rune, rs string) []cell {
	q := rune(x.quote)
	switch {
	case x.escaped:
		x.escaped, x.run = false, 0
	case r == '\\' && !strings.ContainsRune(x.lang.raw, q):
		x.escaped, x.run = true, 0
	case r != q:
		x.run = 0
	case x.mode == lexTriple:
		if x.run++; x.run == 3 {
			x.mode, x.run = lexCode, 0
		}
	default:
		x.mode = lexCode
	}
	return x.emit(dst, rs, hlString)
}

// code reads a character outside strings and comments.
func (x *codeLexer) code(dst []cell, r rune, rs string) []cell {
	l := x.lang
	switch {
	case x.isWordRune(r) && r != '-' && r != '.',
		r == '#' && l.preprocessor && !x.begun:
		x.wordN = copy(x.word[:], rs)
		return dst
	case r == '#' && l.hashComments && (!l.hashAfterBlank || isBlank(x.prev)):
		x.mode = lexLineComment
		return x.emit(dst, rs, hlComment)
	case r == '/' && l.slashComments:
		x.slash = true
		return dst
	case r == '\'' && l.charQuote:
		x.char[0], x.charN = '\'', 1
		return dst
	case r < utf8.RuneSelf && strings.IndexByte(l.quotes, byte(r)) >= 0:
		x.mode, x.quote = lexString, byte(r)
		if l.triple && r != '`' {
			x.mode, x.run = lexOpening, 1
		}
		return x.emit(dst, rs, hlString)
	case r == '$' && l.dollarVars:
		x.mode = lexVar
		return x.emit(dst, rs, hlVar)
	case r == '{' && l.dollarVars && x.prev == '$':
		x.mode = lexBraceVar
		return x.emit(dst, rs, hlVar)
	}
	return x.emit(dst, rs, 0)
}

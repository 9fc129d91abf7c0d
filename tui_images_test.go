package main

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// testImage encodes a w×h picture of noise (so that PNG cannot shrink it
// much) in format.
func testImage(t testing.TB, format string, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewSource(1))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Intn(256))
	}
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, &gif.Options{NumColors: 16})
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func imageBlock(data []byte, mime string) Block {
	return Block{Type: BlockImage, MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)}
}

func TestDetectImagesFromTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want imageProtocol
		warn bool
	}{
		{map[string]string{"TERM": "xterm-256color"}, imagesOff, false},
		{map[string]string{"KITTY_WINDOW_ID": "1", "TERM": "xterm-kitty"}, imagesKitty, false},
		{map[string]string{"TERM": "xterm-kitty"}, imagesKitty, false},
		{map[string]string{"TERM_PROGRAM": "ghostty", "TERM": "xterm-ghostty"}, imagesKitty, false},
		{map[string]string{"TERM_PROGRAM": "WezTerm"}, imagesKitty, false},
		{map[string]string{"TERM_PROGRAM": "iTerm.app"}, imagesITerm, false},
		{map[string]string{"LC_TERMINAL": "iTerm2"}, imagesITerm, false},
		{map[string]string{"TERM_PROGRAM": "iTerm.app", "TMUX": "/tmp/tmux-1/default,1,0"}, imagesOff, false},
		{map[string]string{"KITTY_WINDOW_ID": "1", "TERM": "screen-256color"}, imagesOff, false},
		{map[string]string{"KITTY_WINDOW_ID": "1", "ZOT_INLINE_IMAGES": "off"}, imagesOff, false},
		{map[string]string{"TERM": "xterm", "ZOT_INLINE_IMAGES": "kitty"}, imagesKitty, false},
		{map[string]string{"TMUX": "x", "ZOT_INLINE_IMAGES": "iterm"}, imagesITerm, false},
		{map[string]string{"KITTY_WINDOW_ID": "1", "ZOT_INLINE_IMAGES": "sixel"}, imagesOff, true},
	} {
		got, warn := detectImages(func(k string) string { return c.env[k] })
		if got != c.want || (warn != "") != c.warn {
			t.Errorf("%v: %v, %q; want %v (warning %v)", c.env, got, warn, c.want, c.warn)
		}
	}
}

// TestImagePlaceholdersComeFromTheBytes: type and pixel size are read from
// the image's header, whatever the block claims.
func TestImagePlaceholdersComeFromTheBytes(t *testing.T) {
	t.Parallel()
	webp := append([]byte("RIFF\x10\x00\x00\x00WEBPVP8 "), make([]byte, 20)...)
	for _, c := range []struct {
		b    Block
		want string
	}{
		{imageBlock(testImage(t, "png", 64, 32), "image/png"), `^\[image PNG 64×32, [\d.]+ KiB\]$`},
		{imageBlock(testImage(t, "jpeg", 40, 30), "image/png"), `^\[image JPEG 40×30, [\d.]+ (KiB|bytes)\]$`},
		{imageBlock(testImage(t, "gif", 7, 9), "image/gif"), `^\[image GIF 7×9, \d+ bytes\]$`},
		{imageBlock(webp, "image/webp"), `^\[image WebP, 36 bytes\]$`},
		{imageBlock([]byte("\x1b]0;pwned\x07 not an image"), "image/png\x1b[2J"), `^\[image: not an image zot can read, 23 bytes\]$`},
		{Block{Type: BlockImage, MimeType: "image/png", Data: "%%%"}, `^\[image: not valid base64\]$`},
	} {
		if got := readImageBlock(c.b).placeholder(); !regexp.MustCompile(c.want).MatchString(got) {
			t.Errorf("placeholder = %q, want %s", got, c.want)
		}
	}
}

// TestKittySequenceIsChunked: kitty takes at most 4096 bytes of base64 in
// one command; every chunk but the last says more follow, only the first
// carries the keys, and the chunks joined are the image.
func TestKittySequenceIsChunked(t *testing.T) {
	t.Parallel()
	data := testImage(t, "png", 80, 60) // about 19 KB: six chunks
	seq := string(kittySequence(data, 10, 5))
	cmds := regexp.MustCompile("\x1b_G([^;]*);([^\x1b]*)\x1b\\\\").FindAllStringSubmatch(seq, -1)
	if len(cmds) < 3 || strings.Join(regexp.MustCompile("\x1b_G[^\x1b]*\x1b\\\\").FindAllString(seq, -1), "") != seq {
		t.Fatalf("%d commands, or bytes outside them", len(cmds))
	}
	var joined string
	for i, c := range cmds {
		keys, payload := c[1], c[2]
		want := "m=1"
		if i == len(cmds)-1 {
			want = "m=0"
		}
		if i == 0 {
			want = "a=T,f=100,q=2,C=1,c=10,r=5," + want
		}
		if keys != want || len(payload) > kittyChunk || (i < len(cmds)-1 && len(payload) != kittyChunk) {
			t.Errorf("command %d: keys %q, %d bytes", i, keys, len(payload))
		}
		joined += payload
	}
	if got, err := base64.StdEncoding.DecodeString(joined); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the chunks do not make the image: %v", err)
	}
	if one := string(kittySequence([]byte("x"), 1, 1)); one != "\x1b_Ga=T,f=100,q=2,C=1,c=1,r=1,m=0;eA==\x1b\\" {
		t.Errorf("a one-chunk picture: %q", one)
	}
}

func TestITermSequence(t *testing.T) {
	t.Parallel()
	data := testImage(t, "jpeg", 16, 16)
	got := string(itermSequence(data, 4, 2))
	want := "\x1b]1337;File=inline=1;size=" + strconv.Itoa(len(data)) + ";width=4;height=2;preserveAspectRatio=1;doNotMoveCursor=1:" + base64.StdEncoding.EncodeToString(data) + "\a"
	if got != want {
		t.Errorf("got %q", got)
	}
}

func TestImageCellsKeepTheShapeWithinBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ w, h, maxC, maxR, cols, rows int }{
		{32, 32, 80, 20, 4, 2},
		{1920, 1080, 100, 20, 71, 20},
		{4000, 100, 50, 20, 50, 1},
		{1, 1, 80, 20, 1, 1},
	} {
		if cols, rows := imageCells(c.w, c.h, c.maxC, c.maxR); cols != c.cols || rows != c.rows {
			t.Errorf("%d×%d in %d×%d: %d×%d cells, want %d×%d", c.w, c.h, c.maxC, c.maxR, cols, rows, c.cols, c.rows)
		}
	}
}

// TestPicturesAreDrawnFromImagesOnly runs a TUI that draws pictures into
// a terminal emulator that accepts picture sequences: images in a tool
// result and an attachment are drawn (kitty: a JPEG as PNG; iTerm2: the
// file as it is), with their placeholders; model text, tool text, errors
// and a hostile MIME type carrying the same sequences draw nothing.
func TestPicturesAreDrawnFromImagesOnly(t *testing.T) {
	t.Parallel()
	kittyAttack := "\x1b_Ga=T,f=100,q=2,C=1,c=1,r=1,m=0;" + base64.StdEncoding.EncodeToString(testImage(t, "png", 8, 8)) + "\x1b\\"
	itermAttack := "\x1b]1337;File=inline=1;size=3;width=1;height=1;preserveAspectRatio=1;doNotMoveCursor=1:YWJj\a"
	hostile := "look " + kittyAttack + " and " + itermAttack + " \x1b7\x1b8 end"
	pngData, jpegData := testImage(t, "png", 64, 48), testImage(t, "jpeg", 32, 32)
	for _, proto := range []imageProtocol{imagesKitty, imagesITerm} {
		tui, v := newTestTUI(t, 100, 40)
		v.images = true
		tui.images = proto
		args := []byte(`{"path":"shot.png"}`)
		feed(tui,
			Event{Type: "assistant_start"},
			Event{Type: "text_delta", Delta: hostile + "\n"},
			Event{Type: "tool_call", ID: "a", Name: "read", Args: args},
			Event{Type: "tool_result", ID: "a", Name: "read", Content: []Block{TextBlock("Image shot.png"), imageBlock(pngData, "image/png\x1b]1337;File=:YWJj\a")}},
			Event{Type: "tool_call", ID: "b", Name: "bash", Args: []byte(`{"command":"cat x"}`)},
			Event{Type: "tool_result", ID: "b", Name: "bash", Content: []Block{TextBlock(hostile)}},
			Event{Type: "error", Message: hostile})
		tui.commitPrompt("see "+hostile, []string{hostile})
		tui.commitRows(tui.pictures([]Block{imageBlock(jpegData, "image/jpeg")}))
		tui.render()
		if len(v.pictures) != 2 {
			t.Fatalf("protocol %d: %d pictures drawn, want the 2 images", proto, len(v.pictures))
		}
		if !bytes.Equal(v.pictures[0], pngData) {
			t.Errorf("protocol %d: the PNG was not sent as it is", proto)
		}
		second, _, err := image.Decode(bytes.NewReader(v.pictures[1]))
		if err != nil || second.Bounds().Dx() != 32 {
			t.Errorf("protocol %d: the JPEG was not drawn: %v", proto, err)
		}
		if proto == imagesITerm && !bytes.Equal(v.pictures[1], jpegData) {
			t.Error("iTerm2 should get the JPEG as it is")
		}
		if _, format, _ := image.DecodeConfig(bytes.NewReader(v.pictures[1])); proto == imagesKitty && format != "png" {
			t.Errorf("kitty got %s, not PNG", format)
		}
		s := v.String()
		if !strings.Contains(s, "[image PNG 64×48,") || strings.Count(s, "look ␛") < 3 {
			t.Errorf("protocol %d: placeholders or defused text missing:\n%s", proto, s)
		}
	}
	// Pictures off: nothing drawn, the placeholder says what it was.
	tui, v := newTestTUI(t, 100, 30)
	feed(tui, Event{Type: "tool_result", ID: "a", Name: "read", Content: []Block{imageBlock(pngData, "image/png")}})
	if rows := tui.pictures([]Block{imageBlock(pngData, "image/png")}); rows != nil || !strings.Contains(v.String(), "[image PNG 64×48,") {
		t.Errorf("with pictures off: %d rows; screen:\n%s", len(rows), v.String())
	}
}

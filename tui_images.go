package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif" // registers GIF for image.DecodeConfig and image.Decode
	_ "image/jpeg"
	"image/png"
	"strconv"
	"strings"
)

// Images in the transcript: a tool result or an attachment that is an
// image is drawn inline on terminals that speak a graphics protocol
// (kitty's, which Ghostty and WezTerm share; iTerm2's OSC 1337), and shown
// elsewhere as a placeholder with its type, pixel size and bytes. The
// sequences are part of the renderer: they are built here from the image's
// own bytes, base64-encoded (an alphabet without control characters), and
// numbers zot computed; no text from the model, a tool or an extension is
// ever put in them, so the sanitiser stays the one door for text.

// imageProtocol is how the terminal draws pictures, if at all.
type imageProtocol int

const (
	imagesOff imageProtocol = iota
	imagesKitty
	imagesITerm
)

// detectImages picks the protocol from the environment: ZOT_INLINE_IMAGES
// (off, kitty or iterm) when set, else what the terminal announces. Under
// tmux or screen pictures are off: they do not pass graphics through
// without settings zot cannot see. warning is set for a value of
// ZOT_INLINE_IMAGES zot does not know.
func detectImages(getenv func(string) string) (p imageProtocol, warning string) {
	switch v := strings.ToLower(strings.TrimSpace(getenv("ZOT_INLINE_IMAGES"))); v {
	case "off", "none", "0", "false", "no":
		return imagesOff, ""
	case "kitty":
		return imagesKitty, ""
	case "iterm", "iterm2":
		return imagesITerm, ""
	case "", "auto":
	default:
		return imagesOff, fmt.Sprintf("ZOT_INLINE_IMAGES=%s is not off, kitty or iterm; images are shown as placeholders", oneLine(v))
	}
	term, prog := getenv("TERM"), getenv("TERM_PROGRAM")
	switch {
	case getenv("TMUX") != "" || strings.HasPrefix(term, "screen") || strings.HasPrefix(term, "tmux"):
		return imagesOff, ""
	case getenv("KITTY_WINDOW_ID") != "" || term == "xterm-kitty",
		prog == "ghostty" || term == "xterm-ghostty",
		prog == "WezTerm":
		return imagesKitty, ""
	case prog == "iTerm.app" || getenv("LC_TERMINAL") == "iTerm2":
		return imagesITerm, ""
	}
	return imagesOff, ""
}

// imageInfo is what zot read of an image block: the format and pixel size
// from its header (unknown for WebP, which the standard library does not
// read), and its bytes.
type imageInfo struct {
	format        string // PNG, JPEG, GIF, WebP; "" when not an image zot can tell
	width, height int
	data          []byte
	err           string // why the data could not be read
}

// maxImageData bounds the base64 text zot decodes for one image.
const maxImageData = 16 << 20

// readImageBlock decodes an image block's data and reads its header. The
// block's MimeType is not trusted: the format comes from the bytes.
func readImageBlock(b Block) imageInfo {
	if len(b.Data) > maxImageData {
		return imageInfo{err: "too large to read"}
	}
	data, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		return imageInfo{err: "not valid base64"}
	}
	info := imageInfo{data: data}
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		info.format, info.width, info.height = strings.ToUpper(format), cfg.Width, cfg.Height
	} else if imageType(data) == "image/webp" {
		info.format = "WebP"
	} else {
		info.err = "not an image zot can read"
	}
	return info
}

// placeholder describes an image in one line, from its bytes alone.
func (im imageInfo) placeholder() string {
	size := sizeString(int64(len(im.data)))
	switch {
	case im.err != "" && len(im.data) > 0:
		return fmt.Sprintf("[image: %s, %s]", im.err, size)
	case im.err != "":
		return "[image: " + im.err + "]"
	case im.width > 0:
		return fmt.Sprintf("[image %s %d×%d, %s]", im.format, im.width, im.height, size)
	}
	return fmt.Sprintf("[image %s, %s]", im.format, size)
}

// Cells are taken to be twice as tall as wide, about 8×16 pixels, to size
// a picture in rows and columns: terminals scale it into those cells.
const (
	cellPixelsWide = 8
	cellPixelsHigh = 16
	// maxDecodePixels bounds the JPEG or GIF zot decodes to turn into PNG
	// for kitty's protocol, which takes PNG or raw pixels only.
	maxDecodePixels = 4 << 20
)

// imageCells sizes a w×h picture in at most maxCols columns and maxRows
// rows, keeping its shape.
func imageCells(w, h, maxCols, maxRows int) (cols, rows int) {
	cols = max((w+cellPixelsWide-1)/cellPixelsWide, 1)
	rows = max((h+cellPixelsHigh-1)/cellPixelsHigh, 1)
	if cols > maxCols {
		rows, cols = max(rows*maxCols/cols, 1), maxCols
	}
	if rows > maxRows {
		cols, rows = max(cols*maxRows/rows, 1), maxRows
	}
	return cols, rows
}

// pictureRows are the rows that draw im with protocol p, within width
// columns and maxRows rows: rows left blank for the picture, and one more
// that draws it. That last row goes up to the first blank one, saves the
// cursor, draws, restores it and comes back down, so the picture lies
// over rows already on screen and the renderer's count of rows holds
// whatever the terminal does with its cursor. It returns nothing when the
// picture cannot be drawn (off, or a format the protocol does not take).
func pictureRows(im imageInfo, p imageProtocol, width, maxRows int) []string {
	if p == imagesOff || im.err != "" || maxRows < 1 {
		return nil
	}
	w, h := im.width, im.height
	if w == 0 {
		w, h = 64*cellPixelsWide, 16*cellPixelsHigh // WebP: size unknown
	}
	cols, rows := imageCells(w, h, max(width-2, 1), maxRows)
	var seq []byte
	switch p {
	case imagesKitty:
		data, ok := asPNG(im)
		if !ok {
			return nil
		}
		seq = kittySequence(data, cols, rows)
	case imagesITerm:
		seq = itermSequence(im.data, cols, rows)
	}
	out := make([]string, rows, rows+1)
	b := cursorUp(nil, rows)
	b = append(b, "\x1b7  "...) // two columns in, as results are indented
	b = append(b, seq...)
	b = append(b, "\x1b8"...)
	b = moveDown(b, rows, true)
	return append(out, string(b))
}

// asPNG is the image as PNG: as it is, or a JPEG or GIF of at most
// maxDecodePixels decoded and encoded again.
func asPNG(im imageInfo) ([]byte, bool) {
	switch {
	case im.format == "PNG":
		return im.data, true
	case im.format == "WebP" || im.width*im.height > maxDecodePixels:
		return nil, false
	}
	img, _, err := image.Decode(bytes.NewReader(im.data))
	if err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if enc.Encode(&buf, img) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// kittyChunk is the most base64 one kitty graphics command may carry.
const kittyChunk = 4096

// kittySequence draws PNG data over cols×rows cells with kitty's graphics
// protocol: transmit and display (a=T) PNG (f=100), no reply (q=2: a
// reply would arrive as keystrokes), the cursor left where it is (C=1),
// the base64 in chunks of at most kittyChunk bytes, m=1 on all but the
// last.
func kittySequence(data []byte, cols, rows int) []byte {
	enc := base64.StdEncoding.EncodeToString(data)
	var b []byte
	for first := true; first || enc != ""; first = false {
		chunk := enc[:min(len(enc), kittyChunk)]
		enc = enc[len(chunk):]
		more := "0"
		if enc != "" {
			more = "1"
		}
		b = append(b, "\x1b_G"...)
		if first {
			b = append(b, "a=T,f=100,q=2,C=1,c="...)
			b = strconv.AppendInt(b, int64(cols), 10)
			b = append(b, ",r="...)
			b = strconv.AppendInt(b, int64(rows), 10)
			b = append(b, ',')
		}
		b = append(b, "m="+more+";"...)
		b = append(b, chunk...)
		b = append(b, "\x1b\\"...)
	}
	return b
}

// itermSequence draws an image file's bytes over cols×rows cells with
// iTerm2's OSC 1337, keeping its shape and, where iTerm2 knows how, the
// cursor where it is.
func itermSequence(data []byte, cols, rows int) []byte {
	b := []byte("\x1b]1337;File=inline=1;size=")
	b = strconv.AppendInt(b, int64(len(data)), 10)
	b = append(b, ";width="...)
	b = strconv.AppendInt(b, int64(cols), 10)
	b = append(b, ";height="...)
	b = strconv.AppendInt(b, int64(rows), 10)
	b = append(b, ";preserveAspectRatio=1;doNotMoveCursor=1:"...)
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, '\a')
}

// maxPictureRows bounds a picture's height: a screenful would push the
// conversation out of sight, and the rows must stay on screen while the
// picture is drawn over them.
func (t *TUI) maxPictureRows() int { return min(20, t.height/2) }

// pictures are the rows that draw the images among blocks inline; none
// when the terminal draws no pictures.
func (t *TUI) pictures(blocks []Block) []string {
	if t.images == imagesOff {
		return nil
	}
	var rows []string
	for _, b := range blocks {
		if b.Type == BlockImage {
			rows = append(rows, pictureRows(readImageBlock(b), t.images, t.width, t.maxPictureRows())...)
		}
	}
	return rows
}

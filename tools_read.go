package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// The read tool: a text file's lines from an offset, bounded in lines and
// bytes (readMaxLines, readMaxBytes), or an image as an image block. It
// opens what the jail checked (tools_open.go).

type readTool struct{ env *ToolEnv }

func (readTool) Name() string { return ToolRead }

func (readTool) ReadOnly() bool { return true }

func (readTool) Description() string {
	return "Read a file or image: at most 2000 lines or 50 KiB, and the result gives the offset that continues."
}

func (readTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},` +
		`"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]}`)
}

func (t readTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseReadArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	p, offset, limit := args.Path, args.Offset, args.Limit
	// 0 is what models send for "not set".
	offset = max(offset, 1)
	if limit == 0 || limit > readMaxLines {
		limit = readMaxLines
	}
	// openRead opens only a regular file: a FIFO or a device could block
	// or never end.
	f, info, err := t.env.openRead(ctx, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errorResult("read %s: no such file (relative paths start at %s)", p, t.env.Cwd)
	case err != nil:
		return errorResult("%v", err)
	case info.IsDir():
		return errorResult("read %s: it is a directory; list it with bash (e.g. ls -la %s)", p, p)
	case f == nil:
		return errorResult("read %s: not a regular file (a device, pipe or socket); inspect it with bash", p)
	}
	defer f.Close()

	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return errorResult("read %s: %v", p, err)
	}
	head = head[:n]
	if mime := imageType(head); mime != "" {
		return readImage(f, p, mime, info.Size())
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return errorResult("read %s: it looks binary (a NUL byte in its first 8 KiB), so it cannot be shown as text; inspect it with bash (e.g. file %s, or xxd %s | head)", p, p, p)
	}
	if read := t.env.editorRead(); read != nil {
		real, err := followPath(absPath(t.env.Cwd, p))
		if err != nil {
			return errorResult("read %s: %v", p, err)
		}
		text, err := read(ctx, real)
		switch {
		case err != nil:
			return errorResult("read %s: the editor could not give its text: %v", p, err)
		case text == "":
			return textResult(fmt.Sprintf("(%s is empty)", p))
		}
		return readLines(ctx, bufio.NewReaderSize(strings.NewReader(text), 64<<10), p, int64(len(text)), offset, limit)
	}
	if info.Size() == 0 {
		return textResult(fmt.Sprintf("(%s is empty)", p))
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), f), 64<<10)
	return readLines(ctx, br, p, info.Size(), offset, limit)
}

func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func readImage(f *os.File, p, mime string, size int64) ToolResult {
	if size > readMaxImage {
		return errorResult("read %s: the image is %s, above the %s limit for images; make a smaller copy with bash (e.g. ImageMagick: convert %s -resize 50%% /tmp/small.png) and read that", p, sizeString(size), sizeString(readMaxImage), p)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return errorResult("read %s: %v", p, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, readMaxImage+1))
	if err != nil {
		return errorResult("read %s: %v", p, err)
	}
	if len(data) > readMaxImage {
		return errorResult("read %s: the image grew above the %s limit while being read", p, sizeString(readMaxImage))
	}
	return ToolResult{Content: []Block{
		TextBlock(fmt.Sprintf("Image %s (%s, %s)", p, mime, sizeString(int64(len(data))))),
		{Type: BlockImage, MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)},
	}}
}

// readLines streams to line offset and returns up to limit lines within
// readMaxBytes. Memory stays bounded by the reader's buffer and the byte
// budget, whatever the size of the file or the length of its lines.
func readLines(ctx context.Context, br *bufio.Reader, p string, size int64, offset, limit int) ToolResult {
	pastEnd := func(lines int) ToolResult {
		return errorResult("read %s: offset %d is past the end of the file (it has %d lines)", p, offset, lines)
	}
	var consumed int64
	for line := 1; line < offset; line++ {
		_, n, err := readLine(ctx, br, 0, nil)
		consumed += n
		switch {
		case err == io.EOF && n > 0:
			return pastEnd(line)
		case err == io.EOF:
			return pastEnd(line - 1)
		case err != nil:
			return errorResult("read %s: %v", p, err)
		case line%(1<<16) == 0 && ctx.Err() != nil:
			return errorResult("read %s: %v", p, ctx.Err())
		}
	}

	var out bytes.Buffer
	var text []byte
	shown, held, eof := 0, false, false // held: a line was read but left for the next call
	for shown < limit && !eof {
		var n int64
		var err error
		text, n, err = readLine(ctx, br, readMaxBytes+1, text[:0])
		consumed += n
		if eof = err == io.EOF; err != nil && !eof {
			return errorResult("read %s: %v", p, err)
		}
		if n == 0 {
			break
		}
		text = bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
		if out.Len()+len(text)+1 <= readMaxBytes {
			out.Write(text)
			out.WriteByte('\n')
			shown++
			continue
		}
		if shown > 0 {
			held = true // the next call starts with it rather than cut it
			break
		}
		keep := utf8Prefix(text, readMaxBytes-256)
		out.Write(keep)
		fmt.Fprintf(&out, "\n[line %d is %s long; showed its first %d bytes. See the rest with bash, e.g. sed -n %dp %s | cut -b %d-]\n",
			offset, sizeString(n), len(keep), offset, p, len(keep)+1)
		shown++
		break
	}
	if shown == 0 {
		return pastEnd(offset - 1)
	}
	if !held {
		if _, err := br.Peek(1); eof || err == io.EOF {
			return textResult(out.String())
		}
	}
	next := offset + shown
	total := fmt.Sprintf("more (%s unread)", sizeString(size-consumed))
	// Counting what is left is cheap for a small rest and tells the model
	// how far it has to go; a huge rest stays unread.
	if size-consumed <= 4<<20 {
		lines, err := next-1, error(nil)
		if held {
			lines++
		}
		for err == nil {
			var n int64
			if _, n, err = readLine(ctx, br, 0, nil); n > 0 {
				lines++
			}
		}
		if total = "more"; err == io.EOF {
			total = strconv.Itoa(lines)
		}
	}
	why := ""
	if held {
		why = ", 50 KiB per call"
	}
	fmt.Fprintf(&out, "[lines %d-%d of %s%s; continue with offset=%d]", offset, next-1, total, why, next)
	return textResult(out.String())
}

// readLine reads one line, keeping at most keep bytes of it in buf. n is
// the line's full length including its newline; err is io.EOF for a last
// line without one (n == 0 at the end of the file).
func readLine(ctx context.Context, br *bufio.Reader, keep int, buf []byte) (line []byte, n int64, err error) {
	for chunks := 1; ; chunks++ {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if room := keep - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if err != bufio.ErrBufferFull {
			return buf, n, err
		}
		if chunks%(1<<14) == 0 && ctx.Err() != nil {
			return buf, n, ctx.Err()
		}
	}
}

package client

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Values of bytes: an item's value may be bytes of any content type
// beside JSON, under the same keys. Up to MaxInlineBytes they travel in one
// request, as the body; larger ones, up to MaxBytes, go straight to and
// from S3: PutBytes reserves an upload, sends the bytes to the presigned
// URL the API answers, and commits; GetBytes follows the API's redirect
// to a presigned download.

// MaxInlineBytes is the largest value one request stores (350 KiB);
// PutBytes sends larger ones through an upload to S3.
const MaxInlineBytes = 350 << 10

// MaxBytes is the largest value an upload takes (5 GB).
const MaxBytes = 5 << 30

// Progress has PutBytes and GetBytes tell f how many of a value's bytes
// have moved (done) of how many there are (total; -1 where the answer
// does not say). A transfer sent again starts again from 0. f is called
// one call at a time, until the call it was given to returns, but not
// always from the caller's goroutine.
func Progress(f func(done, total int64)) CallOption {
	return func(o *callOptions) { o.progress = f }
}

func (o callOptions) report(done, total int64) {
	if o.progress != nil {
		o.progress(done, total)
	}
}

// PutBytes stores size bytes read from r, of contentType (""
// stores application/octet-stream), as k's value, creating the item or
// replacing its value; it returns the item written, without the bytes. It
// reads exactly size bytes of r: fewer is an error, and what follows them
// is left unread. ClassName, TTL, ExpiresAt and Progress apply.
//
// Up to MaxInlineBytes the bytes go in one request: a PUT that replaces
// the item, or, where there is none, a POST that creates it. With IfMatch
// only the PUT is sent (ErrNotFound where there is no item,
// ErrPreconditionFailed at another revision), and it is retried as Update
// is. Larger values, up to MaxBytes, are reserved in the owner's quota
// (ErrQuotaExceeded if they do not fit), streamed from r to S3, never held
// whole, and committed; an upload takes no IfMatch. The transfer is not
// bounded by the HTTP client's Timeout but fails when no byte moves for as
// long, and is sent again after S3 or the network failed only if r is an
// io.Seeker, which PutBytes moves back to where it began.
func (c *Client) PutBytes(ctx context.Context, k Key, r io.Reader, size int64, contentType string, opts ...CallOption) (Item, error) {
	o := collect(opts)
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	switch {
	case size < 0 || size > MaxBytes:
		return Item{}, fmt.Errorf("a value of %d bytes: the size must be from 0 to %d (5 GB)", size, int64(MaxBytes))
	case isJSONType(contentType):
		return Item{}, fmt.Errorf("content type %s is JSON: store JSON with Create or Update", contentType)
	case size <= MaxInlineBytes:
		return c.putInline(ctx, k, r, size, contentType, o)
	case o.ifMatch != "":
		return Item{}, fmt.Errorf("IfMatch applies to values of up to %d bytes (350 KiB): the upload of a larger one takes no precondition", MaxInlineBytes)
	}
	return c.upload(ctx, k, r, size, contentType, o)
}

// putInline stores a value of up to MaxInlineBytes in one request.
func (c *Client) putInline(ctx context.Context, k Key, r io.Reader, size int64, contentType string, o callOptions) (Item, error) {
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return Item{}, fmt.Errorf("reading the value's %d bytes: %w", size, err)
	}
	o.report(0, size)
	h := o.header()
	o.fieldHeaders(h)
	req := request{method: http.MethodPut, path: k.path(), refused: k.checkItem(), body: body, contentType: contentType, header: h, retry: o.writeRetry()}
	var it Item
	var err error
	if o.ifMatch != "" {
		it, err = c.item(ctx, req, http.StatusOK)
	} else {
		it, err = c.upsert(ctx, req)
	}
	if err == nil {
		o.report(size, size)
	}
	return it, err
}

// upsertRounds bounds how often upsert goes from PUT to POST and back
// while other writers create and delete the item in between.
const upsertRounds = 3

// upsert creates or replaces an item with the body of r: a PUT replaces
// the item there is; where there is none (404) a POST creates it, and
// where another writer created it in between (409) the PUT is sent again.
func (c *Client) upsert(ctx context.Context, r request) (Item, error) {
	for round := 1; ; round++ {
		r.method = http.MethodPut
		it, err := c.item(ctx, r, http.StatusOK)
		if !errors.Is(err, ErrNotFound) {
			return it, err
		}
		r.method = http.MethodPost
		it, err = c.item(ctx, r, http.StatusCreated)
		if !errors.Is(err, ErrConflict) || round == upsertRounds {
			return it, err
		}
	}
}

// uploadGrant is what POST {item}?upload answers: where to send the
// bytes, and until when.
type uploadGrant struct {
	UploadID  string            `json:"uploadId"`
	URL       string            `json:"url"`
	Fields    map[string]string `json:"fields"`
	ExpiresAt time.Time         `json:"expiresAt"`
}

// upload stores a large value: it reserves the upload, sends the bytes to
// S3 and commits.
func (c *Client) upload(ctx context.Context, k Key, r io.Reader, size int64, contentType string, o callOptions) (Item, error) {
	ttl, expiresAt := o.expiry()
	body, err := jsonBody(struct {
		Size        int64   `json:"size"`
		ContentType string  `json:"contentType"`
		ClassName   *string `json:"className,omitempty"`
		TTL         int64   `json:"ttl,omitempty"`
		ExpiresAt   string  `json:"expiresAt,omitempty"`
	}{size, contentType, o.className, ttl, expiresAt})
	if err != nil {
		return Item{}, err
	}
	// A reservation sent again would reserve the bytes twice, until the
	// first one lapsed: it is sent again only when it did nothing.
	var grant uploadGrant
	reserve := request{method: http.MethodPost, path: k.path(), refused: k.checkItem(), query: url.Values{"upload": {""}}, body: body, retry: unsent}
	if _, err := c.call(ctx, reserve, &grant, http.StatusCreated); err != nil {
		return Item{}, err
	}
	if err := c.sendUpload(ctx, grant, r, size, o); err != nil {
		return Item{}, fmt.Errorf("sending the value to S3 (upload %s): %w", grant.UploadID, err)
	}
	// A commit is idempotent: sent again after its answer was lost, it
	// answers the item it committed.
	body, err = jsonBody(struct {
		UploadID string `json:"uploadId"`
	}{grant.UploadID})
	if err != nil {
		return Item{}, err
	}
	commit := request{method: http.MethodPost, path: k.path(), refused: k.checkItem(), query: url.Values{"commit": {""}}, body: body, retry: always}
	return c.item(ctx, commit, http.StatusOK, http.StatusCreated)
}

// sendUpload sends the value to the upload's URL; it sends it again after
// a failure that may pass if r can be moved back to where it began and
// the upload is still valid.
func (c *Client) sendUpload(ctx context.Context, grant uploadGrant, r io.Reader, size int64, o callOptions) error {
	form, err := newForm(grant.Fields)
	if err != nil {
		return err
	}
	seeker, rewinds := r.(io.Seeker)
	var start int64
	if rewinds {
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			rewinds = false
		}
	}
	for attempt := 0; ; attempt++ {
		err := c.postForm(ctx, grant.URL, form, r, size, o)
		if err == nil || !rewinds || attempt >= c.maxRetries || !transferTransient(err) {
			return err
		}
		wait := c.wait(err, attempt)
		if time.Now().Add(wait).After(grant.ExpiresAt) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		if _, err := seeker.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("moving the value's reader back to send it again: %w", err)
		}
	}
}

// transferTransient reports whether a transfer to or from S3 that failed
// with err may pass if made again: S3 unavailable or busy, the connection
// lost or stalled.
func transferTransient(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status >= 500 || apiErr.Status == http.StatusTooManyRequests
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errReader)
}

// errReader marks a failure of the caller's reader, which sending again
// does not mend.
var errReader = errors.New("the value's reader failed")

// postForm sends one upload of the value to S3: the form, streamed from r
// as it is sent, with its Content-Length, which S3 requires.
func (c *Client) postForm(ctx context.Context, url string, form form, r io.Reader, size int64, o callOptions) error {
	ctx, touch, stop := c.watchIdle(ctx)
	defer stop()
	o.report(0, size)
	file := &countingReader{r: &exactReader{r: r, size: size}, meter: meter{total: size, touch: touch, report: o.report}}
	defer file.close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, form.body(file))
	if err != nil {
		return err
	}
	req.ContentLength = form.length(size)
	req.Header.Set("Content-Type", form.contentType)
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.transfer.Do(req)
	if err != nil {
		if ferr := file.failure(); ferr != nil {
			return ferr
		}
		return stalled(ctx, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return stalled(ctx, err)
	}
	if res.StatusCode/100 != 2 {
		return s3Error(res.StatusCode, res.Header, body)
	}
	return nil
}

// GetBytes writes k's value to w and returns the item's fields, without
// the bytes: its ETag, version, dates, subjects, class name, content type
// and size. A large value is read from S3, where the API's redirect
// points, without the API's credentials; the transfer is bounded as
// PutBytes's is. A JSON value is written as its JSON text (the item's
// Data). IfNoneMatch and Progress apply.
//
// A read that fails before any byte reached w is retried as Get is; once
// bytes have reached w it is not, and the error says so.
func (c *Client) GetBytes(ctx context.Context, k Key, w io.Writer, opts ...CallOption) (Item, error) {
	o := collect(opts)
	h := o.header()
	h.Set("Accept", "*/*")
	var it Item
	read := func(res *http.Response) error {
		it = itemFromHeaders(k, res.Header)
		switch {
		case res.StatusCode == http.StatusFound:
			largeFromHeaders(&it, res.Header)
			return c.download(ctx, res.Header.Get("Location"), w, &it, o)
		case !bytesInBody(res.Header):
			body, err := io.ReadAll(res.Body)
			if err != nil {
				return err
			}
			it = Item{}
			if err := json.Unmarshal(body, &it); err != nil {
				return fmt.Errorf("GET %s answered a body that is not the expected JSON: %w", k.path(), err)
			}
			it.ETag = res.Header.Get("ETag")
			_, err = w.Write(it.Data)
			if err != nil {
				return &deliveredError{err}
			}
			return nil
		}
		n, err := deliver(w, res.Body, res.ContentLength, nil, o)
		it.Size = n
		return err
	}
	err := c.exchange(ctx, request{method: http.MethodGet, path: k.path(), refused: k.checkItem(), header: h, retry: always}, read, http.StatusOK, http.StatusFound)
	return it, err
}

// download writes the large value at location (a presigned S3 URL) to w,
// and its content type and size to it.
func (c *Client) download(ctx context.Context, location string, w io.Writer, it *Item, o callOptions) error {
	ctx, touch, stop := c.watchIdle(ctx)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return fmt.Errorf("the API redirected to %q: %w", location, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.transfer.Do(req)
	if err != nil {
		return stalled(ctx, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		if err != nil {
			return stalled(ctx, err)
		}
		return s3Error(res.StatusCode, res.Header, body)
	}
	it.ContentType = res.Header.Get("Content-Type")
	n, err := deliver(w, res.Body, res.ContentLength, touch, o)
	it.Size = n
	if err != nil {
		var delivered *deliveredError
		if errors.As(err, &delivered) {
			return &deliveredError{stalled(ctx, delivered.err)}
		}
		return stalled(ctx, err)
	}
	return nil
}

// deliver copies a value's bytes from body to w, of total bytes (-1:
// unknown), reporting progress, and returns how many it wrote. A failure
// once bytes reached w, or of w itself, is a *deliveredError.
func deliver(w io.Writer, body io.Reader, total int64, touch func(), o callOptions) (int64, error) {
	o.report(0, total)
	cw := &countingWriter{w: w, meter: meter{total: total, touch: touch, report: o.report}}
	n, err := io.Copy(cw, body)
	if err != nil && (n > 0 || cw.err != nil) {
		return n, &deliveredError{fmt.Errorf("after %d bytes written: %w", n, err)}
	}
	return n, err
}

// bytesInBody reports whether a read's answer is an item's value of bytes,
// with the item's fields in headers, rather than the item as JSON.
func bytesInBody(h http.Header) bool {
	return h.Get("Uds-Version") != "" && !isJSONType(h.Get("Content-Type"))
}

// isJSONType reports whether a Content-Type names JSON: application/json
// or a +json type.
func isJSONType(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == "application/json" || strings.HasSuffix(t, "+json"))
}

// itemFromHeaders reads the fields of k's item from the headers of an
// answer whose body is its value.
func itemFromHeaders(k Key, h http.Header) Item {
	it := Item{
		ApplicationUUID: k.App, Namespace: k.Namespace, ID: k.ID, SortKey: k.SortKey,
		ContentType: h.Get("Content-Type"), ETag: h.Get("ETag"),
		ClassName: headerText(h.Get("Uds-Class-Name")), CreatedBySubject: headerText(h.Get("Uds-Created-By-Subject")),
		UpdatedBySubject: headerText(h.Get("Uds-Updated-By-Subject")),
	}
	it.Version, _ = strconv.ParseInt(h.Get("Uds-Version"), 10, 64)
	for _, f := range []struct {
		header string
		at     *time.Time
	}{{"Uds-Created-Date", &it.CreatedDate}, {"Uds-Updated-Date", &it.UpdatedDate}, {"Uds-Expires-At", &it.ExpiresAt}} {
		if t, err := time.Parse(time.RFC3339Nano, h.Get(f.header)); err == nil {
			*f.at = t
		}
	}
	return it
}

// largeFromHeaders reads what the 302 to a large value says of it: its type
// and size, in headers of their own (the answer has no body to type).
func largeFromHeaders(it *Item, h http.Header) {
	it.Large, it.ContentType = true, h.Get("Uds-Content-Type")
	it.Size, _ = strconv.ParseInt(h.Get("Uds-Size"), 10, 64)
}

// headerText reads a header that carries text the API percent-encodes
// where it holds more than printable ASCII (subjects, class names); a
// value that is not such an encoding is shown as it came.
func headerText(v string) string {
	if s, ok := uds.ParseHeaderText(v); ok {
		return s
	}
	return v
}

// s3Error reads an error answer of S3 (XML: <Error><Code>, <Message>) as
// an *APIError of its status.
func s3Error(status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, RetryAfter: retryAfter(h), Body: body}
	var b struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(body, &b) == nil {
		e.Message, e.Details = b.Code, b.Message
	}
	return e
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// The token file, $ZOT_HOME/mcp-oauth.json (mode 0600): the tokens a user
// authorized and the client registrations zot made, one entry per server
// URL. A token is read back only for the server URL it was stored under,
// so a server of another name, or a project's server named like one of
// yours, never gets it. Tokens of client credentials and of an identity
// provider's assertion are not stored: a new process asks anew.

const mcpTokenFile = "mcp-oauth.json"

// mcpStoredServer is one server's entry.
type mcpStoredServer struct {
	Name   string           `json:"name,omitempty"` // the server's name at the last login, for a reader
	Token  *mcpToken        `json:"token,omitempty"`
	Client *mcpStoredClient `json:"client,omitempty"`
}

// mcpStoredClient is a dynamic registration: reused, with its redirect
// URI's port, until that port is taken or the authorization server
// changes.
type mcpStoredClient struct {
	Issuer      string `json:"issuer"`
	ID          string `json:"client_id"`
	Secret      string `json:"client_secret,omitempty"`
	AuthMethod  string `json:"auth_method"`
	RedirectURI string `json:"redirect_uri"`
}

type mcpTokenFileData struct {
	Servers map[string]*mcpStoredServer `json:"servers"`
}

// mcpTokenStore reads and writes the token file. Writes replace it whole
// (writeFileAtomic) under an exclusive lock on mcp-oauth.json.lock, so two
// zots renewing a token one after the other both end with the newest.
type mcpTokenStore struct {
	path string
}

// load returns the entry for key; a missing file or entry is an empty one.
func (s mcpTokenStore) load(key string) (mcpStoredServer, error) {
	d, err := s.read()
	if err != nil || d.Servers[key] == nil {
		return mcpStoredServer{}, err
	}
	return *d.Servers[key], nil
}

// update runs fn on key's entry under the lock and writes the file when
// fn succeeds; an entry left empty is removed.
func (s mcpTokenStore) update(key string, fn func(e *mcpStoredServer) error) error {
	// A lock that cannot be taken names its file (…json.lock).
	return underLock(s.path+".lock", func() error {
		d, err := s.read()
		if err != nil {
			return err
		}
		e := d.Servers[key]
		if e == nil {
			e = &mcpStoredServer{}
		}
		if err := fn(e); err != nil {
			return err
		}
		if e.Token == nil && e.Client == nil {
			delete(d.Servers, key)
		} else {
			d.Servers[key] = e
		}
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileAtomic(s.path, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("token file: %w", err)
		}
		return nil
	})
}

// read parses the file, refusing one that others can read, as auth.json.
func (s mcpTokenStore) read() (mcpTokenFileData, error) {
	d := mcpTokenFileData{Servers: map[string]*mcpStoredServer{}}
	st, err := os.Stat(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("token file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return d, fmt.Errorf("%s is readable by other users (mode %04o); run: chmod 600 %q", s.path, st.Mode().Perm(), s.path)
	}
	b, err := readUntrustedFile(s.path, 16<<20)
	if err != nil {
		return d, fmt.Errorf("token file: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("token file %s is not valid JSON (%v); remove it and log in again", s.path, err)
	}
	if d.Servers == nil {
		d.Servers = map[string]*mcpStoredServer{}
	}
	return d, nil
}

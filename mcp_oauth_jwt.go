package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// jwtSigner signs the client assertions of private_key_jwt (RFC 7523 2.2,
// OpenID Connect Core 9): a short-lived JWT that says "I am this client"
// to one authorization server.
type jwtSigner struct {
	alg string // ES256, ES384 or RS256
	key crypto.Signer
}

// newJWTSigner reads a PEM private key (PKCS #8, SEC 1 or PKCS #1); alg
// "" takes the key's usual algorithm.
func newJWTSigner(pemData []byte, alg string) (*jwtSigner, error) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("a PEM %q block is not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	s := &jwtSigner{alg: alg}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		want := map[elliptic.Curve]string{elliptic.P256(): "ES256", elliptic.P384(): "ES384"}[k.Curve]
		if want == "" || (alg != "" && alg != want) {
			return nil, fmt.Errorf("an EC key on %s does not sign %s", k.Curve.Params().Name, orDefault(alg, "(any algorithm zot knows)"))
		}
		s.alg, s.key = want, k
	case *rsa.PrivateKey:
		if alg != "" && alg != "RS256" {
			return nil, fmt.Errorf("an RSA key does not sign %s", alg)
		}
		s.alg, s.key = "RS256", k
	default:
		return nil, fmt.Errorf("a %T key: zot signs with EC (P-256, P-384) and RSA keys", key)
	}
	return s, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clientAssertion is a JWT by clientID about itself for audience, valid
// for five minutes.
func (s *jwtSigner) clientAssertion(clientID, audience string) (string, error) {
	now := time.Now()
	header, _ := json.Marshal(map[string]string{"alg": s.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": randomToken()})
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	var sig []byte
	switch s.alg {
	case "ES256", "ES384":
		k := s.key.(*ecdsa.PrivateKey)
		var digest []byte
		if s.alg == "ES256" {
			h := sha256.Sum256([]byte(input))
			digest = h[:]
		} else {
			h := sha512.Sum384([]byte(input))
			digest = h[:]
		}
		r, ss, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return "", err
		}
		// JWS (RFC 7518 3.4): R and S, each the curve's size, big-endian.
		n := (k.Curve.Params().BitSize + 7) / 8
		sig = append(fixedBytes(r, n), fixedBytes(ss, n)...)
	case "RS256":
		h := sha256.Sum256([]byte(input))
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, s.key.(*rsa.PrivateKey), crypto.SHA256, h[:]); err != nil {
			return "", err
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func fixedBytes(v *big.Int, n int) []byte {
	b := make([]byte, n)
	return v.FillBytes(b)
}

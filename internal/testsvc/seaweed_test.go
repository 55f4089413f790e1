package testsvc

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSeaweed starts a real SeaweedFS (building it on first use) and checks
// that S3 wants signed requests and accepts ours, and that the Iceberg REST
// catalog answers.
func TestSeaweed(t *testing.T) {
	t.Parallel()
	sw := StartSeaweed(t, SeaweedConfig{Buckets: []string{"preset"}, TableBuckets: []string{"warehouse"}})
	for _, u := range []string{sw.S3URL, sw.CatalogURL} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("%s is not on loopback", u)
		}
	}

	// S3 is up and refuses anonymous requests.
	status, _ := do(t, mustRequest(t, http.MethodGet, sw.S3URL+"/", nil))
	if status != http.StatusForbidden {
		t.Errorf("anonymous list buckets: got %d, want 403", status)
	}

	// Signed requests work: create a bucket, write and read an object.
	sw.CreateBucket(t, "made-by-test")
	put := mustRequest(t, http.MethodPut, sw.S3URL+"/made-by-test/dir/hello.txt", nil)
	sw.Sign(put, []byte("hello, s3"))
	if status, body := do(t, put); status != http.StatusOK {
		t.Fatalf("put object: %d %s", status, body)
	}
	get := mustRequest(t, http.MethodGet, sw.S3URL+"/made-by-test/dir/hello.txt", nil)
	sw.Sign(get, nil)
	if status, body := do(t, get); status != http.StatusOK || body != "hello, s3" {
		t.Fatalf("get object: %d %q", status, body)
	}
	list := mustRequest(t, http.MethodGet, sw.S3URL+"/made-by-test?list-type=2&prefix=dir%2F", nil)
	sw.Sign(list, nil)
	if status, body := do(t, list); status != http.StatusOK || !strings.Contains(body, "<Key>dir/hello.txt</Key>") {
		t.Fatalf("list objects: %d %s", status, body)
	}
	buckets := mustRequest(t, http.MethodGet, sw.S3URL+"/", nil)
	sw.Sign(buckets, nil)
	status, body := do(t, buckets)
	if status != http.StatusOK || !strings.Contains(body, "<Name>preset</Name>") || !strings.Contains(body, "<Name>made-by-test</Name>") {
		t.Fatalf("list buckets: %d %s", status, body)
	}

	// A wrong secret is refused.
	wrong := *sw
	wrong.SecretKey = "not-the-secret"
	bad := mustRequest(t, http.MethodGet, sw.S3URL+"/", nil)
	wrong.Sign(bad, nil)
	if status, _ := do(t, bad); status != http.StatusForbidden {
		t.Errorf("list buckets with a wrong secret: got %d, want 403", status)
	}

	// The Iceberg REST catalog serves its config without credentials ...
	status, body = do(t, mustRequest(t, http.MethodGet, sw.CatalogURL+"/v1/config?warehouse=s3://warehouse", nil))
	if status != http.StatusOK {
		t.Fatalf("catalog config: %d %s", status, body)
	}
	var config struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	if err := json.Unmarshal([]byte(body), &config); err != nil {
		t.Fatalf("catalog config %s: %v", body, err)
	}
	if config.Overrides["prefix"] != "warehouse" {
		t.Errorf("catalog config %s: want prefix warehouse", body)
	}

	// ... but namespaces only with a token, which it hands out for the key
	// pair (OAuth2 client credentials, as Iceberg clients do it).
	namespaces := sw.CatalogURL + "/v1/warehouse/namespaces"
	if status, body := do(t, mustRequest(t, http.MethodGet, namespaces, nil)); status != http.StatusUnauthorized && status != http.StatusForbidden {
		t.Errorf("anonymous list namespaces: got %d %s, want 401 or 403", status, body)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {sw.AccessKey}, "client_secret": {sw.SecretKey}}
	tokenReq := mustRequest(t, http.MethodPost, sw.CatalogURL+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
	tokenReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	status, body = do(t, tokenReq)
	var token struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(body), &token); status != http.StatusOK || err != nil || token.AccessToken == "" {
		t.Fatalf("catalog token: %d %s", status, body)
	}
	listNS := mustRequest(t, http.MethodGet, namespaces, nil)
	listNS.Header.Set("Authorization", "Bearer "+token.AccessToken)
	if status, body := do(t, listNS); status != http.StatusOK || !strings.Contains(body, "namespaces") {
		t.Fatalf("list namespaces: %d %s", status, body)
	}
}

// TestSeaweedTwice checks that two instances can run side by side (and,
// running in parallel with TestSeaweed, that they can start at once).
func TestSeaweedTwice(t *testing.T) {
	t.Parallel()
	a := StartSeaweed(t, SeaweedConfig{})
	b := StartSeaweed(t, SeaweedConfig{})
	if a.S3URL == b.S3URL || a.CatalogURL == b.CatalogURL {
		t.Fatalf("instances share ports: %s %s, %s %s", a.S3URL, a.CatalogURL, b.S3URL, b.CatalogURL)
	}
	for _, sw := range []*Seaweed{a, b} {
		sw.CreateBucket(t, "same-name")
	}
}

// TestSeaweed_Restart stops a store and starts it again: while stopped
// its S3 port refuses connections, and once back it serves the same URL
// with the objects written before.
func TestSeaweed_Restart(t *testing.T) {
	t.Parallel()
	sw := StartSeaweed(t, SeaweedConfig{Buckets: []string{"kept"}})
	put := mustRequest(t, http.MethodPut, sw.S3URL+"/kept/a.txt", nil)
	sw.Sign(put, []byte("before"))
	if status, body := do(t, put); status != http.StatusOK {
		t.Fatalf("put object: %d %s", status, body)
	}
	sw.Stop()
	if resp, err := http.Get(sw.S3URL + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("the stopped store answered: %s", resp.Status)
	}
	sw.Restart(t)
	get := mustRequest(t, http.MethodGet, sw.S3URL+"/kept/a.txt", nil)
	sw.Sign(get, nil)
	if status, body := do(t, get); status != http.StatusOK || body != "before" {
		t.Errorf("get object after the restart: got %d %q, want 200 %q", status, body, "before")
	}
}

func mustRequest(t *testing.T, method, u string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, string(body)
}

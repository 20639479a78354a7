package harness_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func TestRedactURL(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
		{"user and password", "https://alice:s3cr3t@api.example.com/v1", "https://api.example.com/v1"},
		{"user only", "https://alice@api.example.com/v1", "https://api.example.com/v1"},
		{"escaped password", "https://alice:p%40ss%2Fword@api.example.com:8443/v1", "https://api.example.com:8443/v1"},
		{"secret parameters", "https://api.example.com/v1?api_key=abc&model=x&token=t1&SIG=zz&apikey=k&access_token=a&password=p&signature=s&secret=q",
			"https://api.example.com/v1?api_key=********&model=x&token=********&SIG=********&apikey=********&access_token=********&password=********&signature=********&secret=********"},
		{"case and substring", "https://h/v1?X-Api-Key=abc&AuthToken=def&client_secret=g&passwd=h", "https://h/v1?X-Api-Key=********&AuthToken=********&client_secret=********&passwd=********"},
		{"other parameters kept byte for byte", "https://h/v1?a=1&b=%20x&model=gpt%2B4&flag#frag", "https://h/v1?a=1&b=%20x&model=gpt%2B4&flag#frag"},
		{"empty secret value", "https://h/v1?key=&a=1", "https://h/v1?key=&a=1"},
		{"escaped parameter name", "https://h/v1?api%5Fkey=abc", "https://h/v1?api%5Fkey=********"},
		{"userinfo and parameters", "http://u:p@h:1/x?key=v&a=b", "http://h:1/x?key=********&a=b"},
		{"scheme-relative", "//u:p@h/v1", "//h/v1"},
		{"unparseable with userinfo", "http://user:pa ss%zz@host:8080/v1", "http://host:8080/v1"},
		{"unparseable with a secret parameter", "http://u:p@ho st/v1?token=abc%zz&a=1", "http://ho st/v1?token=********&a=1"},
		{"unparseable without scheme", "user:p%zz@host/v1", "host/v1"},
		{"opaque userinfo", "user:pass@host:8080", "host:8080"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := harness.RedactURL(tc.in)
			if got != tc.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
			for _, secret := range []string{"s3cr3t", "alice", "abc", "pa ss", "t1", "zz"} {
				if strings.Contains(tc.in, secret) && strings.Contains(got, secret) && !strings.Contains(tc.want, secret) {
					t.Errorf("%q still shows %q", got, secret)
				}
			}
		})
	}
}

// RedactURL removes the credentials a model endpoint's address may carry,
// before the address is shown or recorded.
func ExampleRedactURL() {
	fmt.Println(harness.RedactURL("https://bob:hunter2@llm.example.com/v1?api-key=sk-123&deployment=prod"))
	// Output: https://llm.example.com/v1?api-key=********&deployment=prod
}

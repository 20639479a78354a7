package harness

// ConfigSecrets is an optional capability of a channel, evaluator or tool
// type: it names the keys of its records' config that hold secrets (a bot
// token, an API key, a signing secret). The server masks exactly those
// values in what it returns and logs, and keeps the stored value when a
// client sends the mask back.
//
// A type that does not implement ConfigSecrets, or whose SecretFields
// returns nil, declares nothing: the server then treats every key whose
// name contains "token", "secret", "password" or "key" (in any case) as
// secret. Declaring the list is better for both sides: a key such as
// "keywords" or "monkey_mode" is shown as it is, and a secret whose name
// does not look like one ("credentials", "dsn") is still hidden.
//
// Plugins declare their list the same way: a plugin's implementation that
// implements ConfigSecrets reports it to the server when it starts.
type ConfigSecrets interface {
	// SecretFields returns the config keys whose values are secret. A key
	// inside a nested object is named by its path, with dots:
	// "auth.token". An empty, non-nil slice declares that no key is
	// secret; nil declares nothing (see above). The result must not
	// change while the program runs.
	SecretFields() []string
}

// DeclaredSecrets returns the secret config keys impl declares through
// ConfigSecrets, and whether it declares any list at all (false: impl
// does not implement ConfigSecrets, or its SecretFields returned nil).
func DeclaredSecrets(impl any) (fields []string, declared bool) {
	cs, ok := impl.(ConfigSecrets)
	if !ok {
		return nil, false
	}
	fields = cs.SecretFields()
	return fields, fields != nil
}

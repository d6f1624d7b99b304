"""Who may use the console: logins and the installation's first owner (README.md)."""

"""Services: every write and every state change. Named `<entity>_<action>`, keyword-only."""

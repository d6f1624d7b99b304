"""Local workers: people the researchers invite by link, answering on this server."""

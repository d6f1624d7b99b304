"""Money: paying workers, the daily spending cap, extending a batch's budget (README.md)."""

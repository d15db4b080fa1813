"""What a reply or an admin reads: the view of a chat, reads, search, statistics and the row audit."""

"""The rooms service's rules: members, authorship, answerers, questions, lines. No I/O."""

"""Where the tables are and the SQL of the log and the tree: models, the database and the embedded
server, migrations, bulk loading.
"""

"""stub"""

def add_commands(commands):
    pass

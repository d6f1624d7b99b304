from annotation.management.commands.create_batch import Command as CreateBatch


class Command(CreateBatch):
    help = "Alias of create_batch for BISON stages."
